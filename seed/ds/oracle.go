package ds

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"github.com/seedinit/seedinit/seed"
)

// OracleMetadataURL is the root of Oracle Cloud's IMDS (opc/v2 and opc/v1
// below it).
const OracleMetadataURL = "http://169.254.169.254/opc/"

// oracleChassisAssetTag marks an OCI instance in DMI.
const oracleChassisAssetTag = "OracleCloud.com"

func init() { Register(oracleDatasource{}) }

// oracleDatasource is cloud-init's DataSourceOracle: opc/v2/instance/ with
// "Authorization: Bearer Oracle", falling back to opc/v1 without it; the
// VNIC list (opc/vN/vnics/) is kept raw when it answers, and netup
// configures every VNIC from it (netup/parse.OracleVNICs).
//
// Settings (datasource: {Oracle: {...}}): metadata_url (seedinit's: the
// opc/ root), timeout, retries.
type oracleDatasource struct{}

func (oracleDatasource) Name() string       { return "Oracle" }
func (oracleDatasource) NeedsNetwork() bool { return true }

func (oracleDatasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if tag := env.DMIField("chassis_asset_tag"); tag == oracleChassisAssetTag {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI chassis_asset_tag %q", tag)}, nil
	}
	return Evidence{Verdict: NotFound, Reason: "DMI chassis_asset_tag is not " + oracleChassisAssetTag}, nil
}

func (d oracleDatasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	root := baseURLs(env, env.Settings(d.Name()), "metadata_url", OracleMetadataURL)[0]
	if env.Endpoint != "" {
		root = endpointPath(env, "/opc", "opc/")
	}
	client := newMetadataClient(env, d.Name())
	v2 := http.Header{}
	v2.Set("Authorization", "Bearer Oracle")
	version, header := "v2", v2
	instance, err := client.getJSONObject(ctx, joinURL(root, "v2/instance/"), v2)
	if err != nil && ctx.Err() == nil {
		var v1Err error
		version, header = "v1", nil
		instance, v1Err = client.getJSONObject(ctx, joinURL(root, "v1/instance/"), nil)
		if v1Err != nil {
			return nil, fmt.Errorf("fetch Oracle metadata: opc/v2: %w; opc/v1: %w", err, v1Err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("fetch Oracle metadata: %w", err)
	}
	s, err := oracleSeed(instance)
	if err != nil {
		return nil, fmt.Errorf("read Oracle metadata from %s: %w", joinURL(root, version+"/instance/"), err)
	}
	body, err := client.get(ctx, joinURL(root, version+"/vnics/"), header)
	if err != nil {
		// cloud-init logs it and is left with an empty network config;
		// without one, seedinit's network module falls back to DHCP on
		// one NIC.
		client.log.Warn("read Oracle VNICs", "err", err)
	} else if vnics, jerr := decodeJSONList(body); jerr == nil {
		s.NetworkConfig, _ = rawNetwork(vnics)
		s.NetworkFormat = "oracle-vnics"
	}
	s.Subplatform = fmt.Sprintf("metadata (%s)", joinURL(root, version))
	return s, nil
}

// oracleSeed maps opc/vN/instance/ as cloud-init does.
func oracleSeed(instance map[string]any) (*seed.Seed, error) {
	s := &seed.Seed{
		Datasource: "Oracle", Platform: "oracle", CloudName: "oracle",
		Metadata:         instance,
		InstanceID:       stringAt(instance, "id"),
		LocalHostname:    stringAt(instance, "hostname"),
		AvailabilityZone: stringAt(instance, "ociAdName"),
		Region:           stringAt(instance, "canonicalRegionName"),
	}
	if s.InstanceID == "" {
		return nil, fmt.Errorf("instance has no id")
	}
	meta, _ := instance["metadata"].(map[string]any)
	if ud := stringAt(meta, "user_data"); ud != "" {
		decoded, err := base64.StdEncoding.DecodeString(ud)
		if err != nil {
			return nil, fmt.Errorf("decode base64 metadata.user_data: %w", err)
		}
		s.UserData = decoded
	}
	if keys, ok := meta["ssh_authorized_keys"].(string); ok {
		for _, k := range strings.Split(strings.ReplaceAll(keys, "\r\n", "\n"), "\n") {
			if k = strings.TrimSpace(k); k != "" {
				s.PublicKeys = append(s.PublicKeys, k)
			}
		}
	}
	return s, nil
}
