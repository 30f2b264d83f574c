package ds

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// Hetzner Cloud's metadata (YAML) and user-data.
const (
	HetznerMetadataURL = "http://169.254.169.254/hetzner/v1/metadata"
	HetznerUserDataURL = "http://169.254.169.254/hetzner/v1/userdata"
)

func init() { Register(hetznerDatasource{}) }

// hetznerDatasource is cloud-init's DataSourceHetzner.
//
// Settings (datasource: {Hetzner: {...}}): metadata_url, userdata_url,
// timeout, retries. With --url (the server root, or a URL with
// /hetzner/v1), the two documents are below it.
type hetznerDatasource struct{}

func (hetznerDatasource) Name() string       { return "Hetzner" }
func (hetznerDatasource) NeedsNetwork() bool { return true }

func (hetznerDatasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if v := env.DMIField("sys_vendor"); v == "Hetzner" {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI sys_vendor %q", v)}, nil
	}
	return Evidence{Verdict: NotFound, Reason: "DMI sys_vendor is not Hetzner"}, nil
}

func (d hetznerDatasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	settings := env.Settings(d.Name())
	mdURL, udURL := HetznerMetadataURL, HetznerUserDataURL
	if env.Endpoint != "" {
		base := endpointPath(env, "/hetzner/", "hetzner/v1")
		mdURL, udURL = joinURL(base, "metadata"), joinURL(base, "userdata")
	} else {
		if u := settingString(settings, "metadata_url"); u != "" {
			mdURL = u
		}
		if u := settingString(settings, "userdata_url"); u != "" {
			udURL = u
		}
	}
	client := newMetadataClient(env, d.Name())
	mdBody, err := client.get(ctx, mdURL, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch Hetzner metadata: %w", err)
	}
	userData, err := client.get(ctx, udURL, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch Hetzner user-data: %w", err)
	}
	s, err := hetznerSeed(mdBody, userData)
	if err != nil {
		return nil, fmt.Errorf("read Hetzner metadata from %s: %w", Redact(mdURL), err)
	}
	// cloud-init refuses metadata of another server (a stale cache or a
	// misrouted request): the SMBIOS serial is the server id.
	if serial := env.DMIField("product_serial"); serial != "" && serial != s.InstanceID {
		return nil, fmt.Errorf("read Hetzner metadata from %s: instance-id %q does not match the SMBIOS serial %q", Redact(mdURL), s.InstanceID, serial)
	}
	s.Subplatform = fmt.Sprintf("metadata (%s)", Redact(mdURL))
	return s, nil
}

// hetznerSeed maps the YAML metadata and the user-data, which Hetzner may
// send base64-encoded.
func hetznerSeed(mdBody, userData []byte) (*seed.Seed, error) {
	doc, err := yaml11.Load(mdBody)
	if err != nil {
		return nil, fmt.Errorf("decode metadata YAML: %w", err)
	}
	md, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("metadata is not a YAML mapping")
	}
	s := &seed.Seed{
		Datasource: "Hetzner", Platform: "hetzner", CloudName: "hetzner",
		Metadata:         md,
		InstanceID:       stringAt(md, "instance-id"),
		LocalHostname:    stringAt(md, "hostname"),
		Region:           stringAt(md, "region"),
		AvailabilityZone: stringAt(md, "availability-zone"),
		PublicKeys:       listOfStrings(md["public-keys"]),
		UserData:         maybeBase64(userData),
		VendorData:       userDataBytes(md["vendor_data"]),
	}
	if s.InstanceID == "" {
		return nil, errors.New("metadata has no instance-id")
	}
	if nc, ok := md["network-config"].(map[string]any); ok {
		raw, err := json.Marshal(nc)
		if err != nil {
			return nil, fmt.Errorf("encode network-config: %w", err)
		}
		s.NetworkConfig = raw
		s.NetworkFormat = "v" + stringAt(nc, "version")
		if s.NetworkFormat == "v" {
			s.NetworkFormat = "v1"
		}
	}
	return s, nil
}

// maybeBase64 decodes data when it is valid base64, as cloud-init's
// hetzner helper does, and returns it unchanged otherwise.
func maybeBase64(data []byte) []byte {
	if len(data) == 0 {
		return nil
	}
	// Python's b64decode(validate=True) refuses line breaks; Go's
	// decoder would skip them.
	if strings.ContainsAny(string(data), "\r\n") {
		return data
	}
	decoded, err := base64.StdEncoding.Strict().DecodeString(string(data))
	if err != nil {
		return data
	}
	return decoded
}
