package ds

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/seedinit/seedinit/internal/earlyrand"
	"github.com/seedinit/seedinit/seed"
)

// AzureIMDSURL is Azure's instance metadata endpoint.
const AzureIMDSURL = "http://169.254.169.254/metadata/instance"

// cloud-init 22.4's IMDS API versions: the one it wants, and the one it
// falls back to when IMDS answers 400 (unknown version).
const (
	azureIMDSVersion    = "2021-08-01"
	azureIMDSMinVersion = "2019-06-01"
	// azureChassisAssetTag marks a VM on Azure in DMI.
	azureChassisAssetTag = "7783-7084-3265-9085-8269-3286-77"
)

func init() { Register(azureDatasource{}) }

// azureDatasource reads Azure's provisioning data, ovf-env.xml (admin
// user, password, CustomData), from the provisioning CD or a seed
// directory, then IMDS (Metadata: true), as cloud-init's crawl_metadata
// does. Telling the wireserver that the instance is ready, without which
// Azure fails the deployment, is ReportReady's (azure_ready.go), after the
// stages.
//
// Settings (datasource: {Azure: {...}}): metadata_url (seedinit's),
// apply_network_config, timeout, retries.
type azureDatasource struct{}

func (azureDatasource) Name() string       { return "Azure" }
func (azureDatasource) NeedsNetwork() bool { return true }

func (azureDatasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if tag := env.DMIField("chassis_asset_tag"); tag == azureChassisAssetTag {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI chassis_asset_tag %q", tag)}, nil
	}
	// cloud-init's is_platform_viable: a seeded ovf-env.xml will do.
	if env.Root != nil {
		if _, err := env.Root.Stat(azureSeedDir + "/" + azureOvfEnvFile); err == nil {
			return Evidence{Verdict: Found, Reason: azureSeedDir + "/" + azureOvfEnvFile}, nil
		}
	}
	return Evidence{Verdict: NotFound, Reason: "DMI chassis_asset_tag is not Azure's and no " + azureSeedDir + "/" + azureOvfEnvFile}, nil
}

func (d azureDatasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	log := env.Logger()
	ovf, ovfWhere, err := readOvfEnv(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("read Azure provisioning data: %w", err)
	}
	if ovf != nil {
		log.Info("read Azure provisioning data", "from", ovfWhere)
		if ovf.preprovisionedVM {
			log.Warn("ovf-env.xml asks for pre-provisioning (PreprovisionedVm); seedinit does not wait to be reprovisioned and goes on with this data")
		}
	}
	base := baseURLs(env, env.Settings(d.Name()), "metadata_url", AzureIMDSURL)[0]
	if env.Endpoint != "" {
		base = strings.TrimRight(endpointPath(env, "/metadata/instance", "metadata/instance"), "/")
	}
	client := newMetadataClient(env, d.Name())
	client.header.Set("Metadata", "true")
	url := base + "?api-version=" + azureIMDSVersion + "&extended=true"
	md, err := client.getJSONObject(ctx, url, nil)
	if isStatus(err, http.StatusBadRequest) {
		url = base + "?api-version=" + azureIMDSMinVersion
		md, err = client.getJSONObject(ctx, url, nil)
	}
	if err != nil {
		if ovf == nil {
			return nil, fmt.Errorf("fetch Azure IMDS: %w", err)
		}
		// cloud-init goes on with ovf-env.xml alone.
		log.Warn("fetch Azure IMDS; going on with ovf-env.xml alone", "err", err)
		md = map[string]any{}
	}
	s, err := azureSeed(md, ovf, env.DMIField("product_uuid"), settingBool(env.Settings(d.Name()), "apply_network_config", true), azureSaltRandom)
	if err != nil {
		return nil, fmt.Errorf("read Azure metadata (IMDS %s): %w", Redact(url), err)
	}
	s.Subplatform = fmt.Sprintf("imds (%s)", Redact(base))
	if ovf != nil {
		s.Subplatform = ovfWhere
	}
	return s, nil
}

// azureSaltRandom salts ovf-env.xml's password hash. A salt is no secret,
// so it is earlyrand, which never blocks, rather than crypto/rand, which
// would hold PID 1 until the kernel's pool is ready. Tests replace it.
var azureSaltRandom io.Reader = earlyrand.Reader

// azureSeed maps ovf-env.xml (nil when there was none) and IMDS's
// document as cloud-init's crawl_metadata does: IMDS's computerName and
// adminUsername win over ovf-env.xml's, CustomData over IMDS's userData.
// The instance-id is the SMBIOS system UUID in lower case, as cloud-init
// has it (vmId when DMI is unreadable). Without applyNetwork
// (datasource.Azure.apply_network_config: false) the seed has no network
// config, so that the fallback serves, as in cloud-init. random salts the
// password hash.
func azureSeed(md map[string]any, ovf *ovfEnv, systemUUID string, applyNetwork bool, random io.Reader) (*seed.Seed, error) {
	compute, _ := md["compute"].(map[string]any)
	s := &seed.Seed{
		Datasource: "Azure", Platform: "azure", CloudName: "azure",
		Metadata:      map[string]any{"imds": md},
		InstanceID:    strings.ToLower(systemUUID),
		LocalHostname: stringAt(compute, "osProfile", "computerName"),
		Region:        stringAt(compute, "location"),
		// cloud-init reports the fault domain as the zone.
		AvailabilityZone: stringAt(compute, "platformFaultDomain"),
	}
	if s.InstanceID == "" {
		s.InstanceID = stringAt(compute, "vmId")
	}
	if s.InstanceID == "" {
		return nil, fmt.Errorf("no system UUID in DMI and no compute.vmId")
	}
	s.Metadata["instance-id"] = s.InstanceID
	if keys, ok := compute["publicKeys"].([]any); ok {
		for i, k := range keys {
			entry, ok := k.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("compute.publicKeys item %d is a %T, want an object", i, k)
			}
			if data := stringAt(entry, "keyData"); data != "" {
				s.PublicKeys = append(s.PublicKeys, data)
			}
		}
	}
	if ovf != nil {
		hostname, userData, cfg, err := ovf.config(random)
		if err != nil {
			return nil, err
		}
		if s.LocalHostname == "" {
			s.LocalHostname = hostname
		}
		s.UserData, s.Config = userData, cfg
		// cloud-init takes keys from IMDS, else from the wireserver's
		// certificates for ovf-env.xml's fingerprints. seedinit has no
		// certificate fetch; ovf-env.xml's own key values serve instead,
		// so that the admin can log in when IMDS is down.
		if len(s.PublicKeys) == 0 {
			for _, k := range ovf.publicKeys {
				if v, _ := k["value"].(string); strings.TrimSpace(v) != "" {
					s.PublicKeys = append(s.PublicKeys, strings.TrimSpace(v))
				}
			}
		}
		// Kept where the agent keeps it, for the boots after the disc is
		// gone; never with the password.
		if redacted, err := redactOvfPassword(ovf.source); err == nil {
			s.Keep = []seed.KeptFile{{Path: azureAgentDir + "/" + azureOvfEnvFile, Data: redacted, Mode: 0o600, DirMode: 0o700}}
		}
	}
	// cloud-init sets the default user's name from IMDS even over
	// ovf-env.xml's (22.4 fails outright when there is no ovf-env.xml;
	// seedinit names the user anyway).
	if admin := stringAt(compute, "osProfile", "adminUsername"); admin != "" {
		if s.Config == nil {
			s.Config = map[string]any{}
		}
		system, _ := s.Config["system_info"].(map[string]any)
		if system == nil {
			system = map[string]any{}
			s.Config["system_info"] = system
		}
		user, _ := system["default_user"].(map[string]any)
		if user == nil {
			user = map[string]any{}
			system["default_user"] = user
		}
		user["name"] = admin
	}
	if ud := stringAt(compute, "userData"); ud != "" && len(s.UserData) == 0 {
		decoded, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(ud), ""))
		if err != nil {
			return nil, fmt.Errorf("decode base64 compute.userData: %w", err)
		}
		s.UserData = decoded
	}
	if network, ok := md["network"]; ok && network != nil && applyNetwork {
		raw, err := rawNetwork(network)
		if err != nil {
			return nil, err
		}
		s.NetworkConfig, s.NetworkFormat = raw, "azure-imds"
	}
	return s, nil
}
