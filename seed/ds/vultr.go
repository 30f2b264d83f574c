package ds

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/seedinit/seedinit/seed"
)

// VultrMetadataURL is the root of Vultr's metadata service (v1.json below).
const VultrMetadataURL = "http://169.254.169.254"

func init() { Register(vultrDatasource{}) }

// vultrDatasource is cloud-init's DataSourceVultr: one v1.json document.
//
// Settings (datasource: {Vultr: {...}}): url (cloud-init's key), timeout,
// retries.
type vultrDatasource struct{}

func (vultrDatasource) Name() string       { return "Vultr" }
func (vultrDatasource) NeedsNetwork() bool { return true }

func (vultrDatasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if v := env.DMIField("sys_vendor"); v == "Vultr" {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI sys_vendor %q", v)}, nil
	}
	if cmdlineHasWord(env.Cmdline, "vultr") {
		return Evidence{Verdict: Found, Reason: "\"vultr\" on the kernel command line (bare metal)"}, nil
	}
	return Evidence{Verdict: NotFound, Reason: "DMI sys_vendor is not Vultr and no \"vultr\" on the command line"}, nil
}

func (d vultrDatasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	base := baseURLs(env, env.Settings(d.Name()), "url", VultrMetadataURL)[0]
	url := joinURL(base, "v1.json")
	hdr := http.Header{}
	// Vultr builds vendor-data for the client it is told about.
	hdr.Set("Metadata-Token", "cloudinit")
	hdr.Set("User-Agent", "Cloud-Init/22.4.2 - OS: Linux Variant: seedinit")
	md, err := newMetadataClient(env, d.Name()).getJSONObject(ctx, url, hdr)
	if err != nil {
		return nil, fmt.Errorf("fetch Vultr metadata: %w", err)
	}
	s, err := vultrSeed(md)
	if err != nil {
		return nil, fmt.Errorf("read Vultr metadata from %s: %w", Redact(url), err)
	}
	s.Subplatform = fmt.Sprintf("metadata (%s)", Redact(base))
	return s, nil
}

// vultrSeed maps v1.json as cloud-init does.
func vultrSeed(md map[string]any) (*seed.Seed, error) {
	s := &seed.Seed{
		Datasource: "Vultr", Platform: "vultr", CloudName: "vultr",
		Metadata:      md,
		InstanceID:    stringAt(md, "instance-v2-id"),
		LocalHostname: stringAt(md, "hostname"),
		PublicKeys:    listOfStrings(md["public-keys"]),
		UserData:      userDataBytes(md["user-data"]),
	}
	if s.InstanceID == "" {
		return nil, fmt.Errorf("no instance-v2-id")
	}
	if s.LocalHostname == "" {
		s.LocalHostname = "guest"
	}
	region := stringAt(md, "region", "regioncode")
	if cc := stringAt(md, "region", "countrycode"); cc != "" {
		region = cc
	}
	s.Region = strings.ToLower(region)
	vendor, err := vultrVendorData(md["vendor-data"])
	if err != nil {
		return nil, err
	}
	s.VendorData = vendor
	// The key stays with the list: cloud-init reads "cloud_interfaces"
	// (when present) differently from "interfaces", and hands it on as a
	// network config of no version its network code reads. Its own format
	// name makes the network module take the fallback for it.
	for _, key := range []string{"cloud_interfaces", "interfaces"} {
		if ifaces := md[key]; ifaces != nil {
			if s.NetworkConfig, err = rawNetwork(map[string]any{key: ifaces}); err != nil {
				return nil, err
			}
			s.NetworkFormat = "vultr"
			if key == "cloud_interfaces" {
				s.NetworkFormat = "vultr-cloud-interfaces"
			}
			break
		}
	}
	return s, nil
}

// vultrVendorData returns vendor-data as cloud-init reads it: a string is
// the vendor-data; a list (older API) becomes a #cloud-config-archive of
// its items, which is how cloud-init processes a list of parts.
func vultrVendorData(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return userDataBytes(x), nil
	case []any:
		if len(x) == 0 {
			return nil, nil
		}
		raw, err := json.Marshal(x)
		if err != nil {
			return nil, fmt.Errorf("encode vendor-data: %w", err)
		}
		return append([]byte("#cloud-config-archive\n"), raw...), nil
	}
	return nil, fmt.Errorf("vendor-data is a %T, want a string or a list", v)
}
