package ds

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/seedinit/seedinit/seed"
)

// ScalewayMetadataURL and ScalewayMetadataURLIPv6 are Scaleway's metadata
// service on IPv4 and on IPv6 (for IPv6-only instances; cloud-init reads
// it since 23.1).
const (
	ScalewayMetadataURL     = "http://169.254.42.42"
	ScalewayMetadataURLIPv6 = "http://[fd00:42::42]"
)

func init() { Register(scalewayDatasource{}) }

// scalewayDatasource is cloud-init's DataSourceScaleway: conf?format=json,
// user_data/cloud-init and vendor_data/cloud-init.
//
// Settings (datasource: {Scaleway: {...}}): metadata_url, userdata_url,
// vendordata_url (cloud-init's keys), timeout, retries; with --url, the
// three live under that base.
type scalewayDatasource struct{}

func (scalewayDatasource) Name() string       { return "Scaleway" }
func (scalewayDatasource) NeedsNetwork() bool { return true }

func (scalewayDatasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if v := env.DMIField("sys_vendor"); v == "Scaleway" {
		return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI sys_vendor %q", v)}, nil
	}
	if cmdlineHasWord(env.Cmdline, "scaleway") {
		return Evidence{Verdict: Found, Reason: "\"scaleway\" on the kernel command line"}, nil
	}
	if env.Root != nil {
		if env.Root.Exists("/var/run/scaleway") {
			return Evidence{Verdict: Found, Reason: "/var/run/scaleway exists"}, nil
		}
	}
	return Evidence{Verdict: NotFound, Reason: "DMI sys_vendor is not Scaleway and no scaleway marker"}, nil
}

func (d scalewayDatasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	settings := env.Settings(d.Name())
	bases := []string{ScalewayMetadataURL, ScalewayMetadataURLIPv6}
	switch {
	case env.Endpoint != "":
		bases = []string{env.Endpoint}
	case settingString(settings, "metadata_url") != "":
		bases = bases[:1] // the configured URL serves the metadata
	}
	urlFor := func(base, key, path string) string {
		if env.Endpoint == "" {
			if u := settingString(settings, key); u != "" {
				return u
			}
		}
		return joinURL(base, path)
	}
	client := newMetadataClient(env, d.Name())
	// The metadata on both addresses at once; the one that answers
	// first serves the rest.
	type answer struct {
		md  map[string]any
		url string
	}
	first, a, errs := firstAnswer(ctx, bases, func(ctx context.Context, base string) (answer, error) {
		u := urlFor(base, "metadata_url", "conf?format=json")
		md, err := client.getJSONObject(ctx, u, nil)
		return answer{md, u}, err
	})
	if first < 0 {
		return nil, fmt.Errorf("fetch Scaleway metadata: %w", errors.Join(errs...))
	}
	base, md, mdURL := bases[first], a.md, a.url
	s, err := scalewaySeed(md)
	if err != nil {
		return nil, fmt.Errorf("read Scaleway metadata from %s: %w", Redact(mdURL), err)
	}
	if s.UserData, err = scalewayOptional(ctx, client, urlFor(base, "userdata_url", "user_data/cloud-init")); err != nil {
		return nil, fmt.Errorf("fetch Scaleway user-data: %w", err)
	}
	if s.VendorData, err = scalewayOptional(ctx, client, urlFor(base, "vendordata_url", "vendor_data/cloud-init")); err != nil {
		return nil, fmt.Errorf("fetch Scaleway vendor-data: %w", err)
	}
	s.Subplatform = fmt.Sprintf("metadata (%s)", Redact(mdURL))
	return s, nil
}

// scalewayOptional reads user- or vendor-data; 404 means there is none.
func scalewayOptional(ctx context.Context, client *metadataClient, url string) ([]byte, error) {
	body, err := client.get(ctx, url, nil)
	if isStatus(err, http.StatusNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(body) == 0 {
		return nil, nil
	}
	return body, nil
}

// scalewaySeed maps conf?format=json. cloud-init reports neither region
// nor zone for Scaleway; the zone is kept under location.zone_id.
func scalewaySeed(md map[string]any) (*seed.Seed, error) {
	s := &seed.Seed{
		Datasource: "Scaleway", Platform: "scaleway", CloudName: "scaleway",
		Metadata:      md,
		InstanceID:    stringAt(md, "id"),
		LocalHostname: stringAt(md, "hostname"),
	}
	if s.InstanceID == "" {
		return nil, fmt.Errorf("no id")
	}
	if keys, ok := md["ssh_public_keys"].([]any); ok {
		for i, k := range keys {
			entry, ok := k.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("ssh_public_keys item %d is a %T, want an object", i, k)
			}
			if key := stringAt(entry, "key"); key != "" {
				s.PublicKeys = append(s.PublicKeys, key)
			}
		}
	}
	// Keys can also come as tags "AUTHORIZED_KEY=ssh-rsa_AAAA..._comment".
	const prefix = "AUTHORIZED_KEY="
	for _, tag := range listOfStrings(md["tags"]) {
		if key, ok := strings.CutPrefix(tag, prefix); ok && key != "" {
			s.PublicKeys = append(s.PublicKeys, strings.ReplaceAll(key, "_", " "))
		}
	}
	return s, nil
}
