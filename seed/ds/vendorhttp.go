package ds

// VendorHTTP serves appliance vendors whose management server hands out
// metadata in a layout of their own, e.g.
//
//	datasource_list: [VendorHTTP]
//	datasource:
//	  VendorHTTP:
//	    base_url: http://169.254.169.254/acme/latest/
//	    meta_data: meta_data.json        # one JSON (or YAML) object
//	    meta_data_keys: [instance-id, hostname]
//	    meta_data_key_path: meta_data/%s # one URL per key, merged over it
//	    user_data: user_data
//	    vendor_data: vendor_data         # optional
//	    network_config: network_data.json
//	    seed_manifest: seed-manifest     # signed seeds (SEED_MANIFEST.sig beside it)
//	    headers: {X-Appliance: waf}
//	    dmi: {sys_vendor: ACME}          # when set, only on such machines
//
// Paths are relative to base_url; an empty one is not fetched.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/yaml11"
)

func init() { Register(vendorHTTP{}) }

type vendorHTTP struct{}

func (vendorHTTP) Name() string       { return "VendorHTTP" }
func (vendorHTTP) NeedsNetwork() bool { return true }

// vendorHTTPConfig is the datasource's settings.
type vendorHTTPConfig struct {
	BaseURL       string
	MetaData      string
	MetaKeys      []string
	MetaKeyPath   string
	UserData      string
	VendorData    string
	NetworkConfig string
	SeedManifest  string
	Header        http.Header
	DMI           map[string]string
	Platform      string
}

func readVendorHTTPConfig(env *Env) (vendorHTTPConfig, error) {
	s := env.Settings("VendorHTTP")
	c := vendorHTTPConfig{
		BaseURL:     strOr(s, "base_url", ""),
		MetaData:    strOr(s, "meta_data", "meta_data.json"),
		MetaKeyPath: strOr(s, "meta_data_key_path", "meta_data/%s"),
		UserData:    strOr(s, "user_data", "user_data"),
		VendorData:  strOr(s, "vendor_data", ""),
		Platform:    strOr(s, "platform", "vendorhttp"),
		Header:      http.Header{},
		DMI:         map[string]string{},
	}
	c.NetworkConfig = strOr(s, "network_config", "")
	c.SeedManifest = strOr(s, "seed_manifest", seed.ManifestFile)
	if env.Endpoint != "" {
		c.BaseURL = env.Endpoint
	}
	if c.BaseURL == "" {
		return c, errors.New("datasource.VendorHTTP.base_url is not set")
	}
	if !isHTTP(c.BaseURL) {
		return c, fmt.Errorf("datasource.VendorHTTP.base_url %s: want an http or https URL", Redact(c.BaseURL))
	}
	if keys, ok := s["meta_data_keys"].([]any); ok {
		for i, k := range keys {
			ks, ok := k.(string)
			if !ok || ks == "" || strings.ContainsAny(ks, "/?#") {
				return c, fmt.Errorf("datasource.VendorHTTP.meta_data_keys item %d: want a plain key name, got %v", i, k)
			}
			c.MetaKeys = append(c.MetaKeys, ks)
		}
	}
	if h, ok := s["headers"].(map[string]any); ok {
		for k, v := range h {
			c.Header.Set(k, fmt.Sprint(v))
		}
	}
	if m, ok := s["dmi"].(map[string]any); ok {
		for k, v := range m {
			c.DMI[k] = fmt.Sprint(v)
		}
	}
	return c, nil
}

func strOr(s map[string]any, key, def string) string {
	v, ok := s[key]
	if !ok {
		return def
	}
	if v == nil {
		return ""
	}
	return strings.TrimSpace(fmt.Sprint(v))
}

func (vendorHTTP) Probe(ctx context.Context, env *Env) (Evidence, error) {
	if env.Settings("VendorHTTP") == nil && env.Endpoint == "" {
		return Evidence{Reason: "datasource.VendorHTTP is not configured"}, nil
	}
	c, err := readVendorHTTPConfig(env)
	if err != nil {
		return Evidence{Reason: "datasource.VendorHTTP is misconfigured"}, err
	}
	if len(c.DMI) == 0 {
		return Evidence{Verdict: Maybe, Reason: "configured at " + Redact(c.BaseURL) + ", no DMI marker set"}, nil
	}
	fields := make([]string, 0, len(c.DMI))
	for f := range c.DMI {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		if got := env.DMIField(f); got != c.DMI[f] {
			return Evidence{Reason: fmt.Sprintf("DMI %s is %q, not %q", f, got, c.DMI[f])}, nil
		}
	}
	return Evidence{Verdict: Found, Reason: fmt.Sprintf("DMI %s matches", strings.Join(fields, ", "))}, nil
}

func (vendorHTTP) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	c, err := readVendorHTTPConfig(env)
	if err != nil {
		return nil, fmt.Errorf("read VendorHTTP: %w", err)
	}
	f := env.HTTP().WithOptions(env.Config.FetchOptionsFor("VendorHTTP"))
	base := strings.TrimRight(c.BaseURL, "/") + "/"
	get := func(p string) ([]byte, error) {
		resp, err := f.Get(ctx, base+strings.TrimLeft(p, "/"), c.Header)
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	}
	md := map[string]any{}
	var metaRaw []byte
	if c.MetaData != "" {
		raw, err := get(c.MetaData)
		if err != nil && !(IsNotFound(err) && len(c.MetaKeys) > 0) {
			return nil, fmt.Errorf("read VendorHTTP meta-data: %w", err)
		}
		if err == nil {
			if md, err = ParseVendorMetadata(raw); err != nil {
				return nil, fmt.Errorf("parse VendorHTTP meta-data %s: %w", Redact(base+c.MetaData), err)
			}
			metaRaw = raw
		}
	}
	if len(c.MetaKeys) > 0 {
		metaRaw = nil // meta-data from many URLs: no one document to sign
	}
	for _, k := range c.MetaKeys {
		p := strings.Replace(c.MetaKeyPath, "%s", k, 1)
		raw, err := get(p)
		if IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read VendorHTTP meta-data key %s: %w", k, err)
		}
		md[k] = strings.TrimSpace(string(raw))
	}
	m, err := vendorMeta(md)
	if err != nil {
		return nil, fmt.Errorf("read VendorHTTP meta-data at %s: %w", Redact(base), err)
	}
	s := &seed.Seed{Datasource: "VendorHTTP", Platform: c.Platform, CloudName: c.Platform,
		Subplatform: fmt.Sprintf("metadata (%s)", Redact(c.BaseURL))}
	s.SetMeta(m)
	optional := func(what, p string) ([]byte, error) {
		if p == "" {
			return nil, nil
		}
		b, err := get(p)
		if IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read VendorHTTP %s: %w", what, err)
		}
		return b, nil
	}
	if s.UserData, err = optional("user-data", c.UserData); err != nil {
		return nil, err
	}
	if s.VendorData, err = optional("vendor-data", c.VendorData); err != nil {
		return nil, err
	}
	nc, err := optional("network config", c.NetworkConfig)
	if err != nil {
		return nil, err
	}
	// What the trust decision needs: the parts as served (the meta-data
	// when it is one document, not when meta_data_keys build it) and the
	// manifest beside them.
	s.MetaRaw = metaRaw
	where := func(p string) string { return Redact(base + strings.TrimLeft(p, "/")) }
	if metaRaw != nil {
		doc := seed.Document{Part: "meta-data", Where: where(c.MetaData), Content: metaRaw}
		if md, err := ParseVendorMetadata(metaRaw); err != nil {
			doc.MetaErr = err.Error()
		} else if m, err := vendorMeta(md); err != nil {
			doc.MetaErr = err.Error()
		} else {
			doc.Meta = &m
		}
		s.AddDocument(doc)
	}
	for _, part := range []struct {
		name, path string
		content    []byte
	}{{"user-data", c.UserData, s.UserData}, {"vendor-data", c.VendorData, s.VendorData}, {"network-config", c.NetworkConfig, nc}} {
		if part.content != nil {
			s.AddDocument(seed.Document{Part: part.name, Where: where(part.path), Content: part.content})
		}
	}
	if c.SeedManifest != "" {
		read := func(p string) ([]byte, error) {
			b, err := optional("seed manifest", p)
			if err == nil && b == nil {
				return nil, fs.ErrNotExist
			}
			return b, err
		}
		manifest, err := seed.ReadManifest(func(name string) ([]byte, error) {
			if name == seed.ManifestSignatureFile {
				return read(c.SeedManifest + ".sig")
			}
			return read(c.SeedManifest)
		}, func(name string) string {
			if name == seed.ManifestSignatureFile {
				return where(c.SeedManifest + ".sig")
			}
			return where(c.SeedManifest)
		})
		if err != nil {
			return nil, err
		}
		if manifest != nil {
			s.Manifests = append(s.Manifests, *manifest)
		}
	}
	if len(nc) > 0 {
		s.NetworkConfig = nc
		if checkNetworkDataJSON(nc) == nil && strings.HasSuffix(c.NetworkConfig, ".json") {
			s.NetworkFormat = "network_data.json"
		} else if s.NetworkFormat, err = seed.NetworkConfigFormat(nc); err != nil {
			return nil, fmt.Errorf("parse VendorHTTP network config: %w", err)
		}
		for i := range s.Documents {
			if s.Documents[i].Part == "network-config" {
				s.Documents[i].Format = s.NetworkFormat
			}
		}
	}
	return s, nil
}

// vendorMeta reads a vendor's meta-data tree: the instance-id from
// instance-id, instance_id or uuid, the hostname from local-hostname,
// hostname or name, keys from public-keys and public_keys. md becomes the
// tree, with instance-id set.
func vendorMeta(md map[string]any) (seed.Meta, error) {
	m := seed.Meta{Metadata: md}
	for _, k := range []string{"instance-id", "instance_id", "uuid"} {
		if m.InstanceID = scalar(md[k]); m.InstanceID != "" {
			break
		}
	}
	if m.InstanceID == "" {
		return m, errors.New("no instance-id, instance_id or uuid")
	}
	md["instance-id"] = m.InstanceID
	for _, k := range []string{"local-hostname", "hostname", "name"} {
		if m.LocalHostname = scalar(md[k]); m.LocalHostname != "" {
			break
		}
	}
	m.AvailabilityZone = scalar(md["availability_zone"])
	if m.AvailabilityZone == "" {
		m.AvailabilityZone = scalar(md["availability-zone"])
	}
	m.Region = scalar(md["region"])
	m.PublicKeys = seed.NormalizePublicKeys(md["public-keys"])
	m.PublicKeys = append(m.PublicKeys, seed.NormalizePublicKeys(md["public_keys"])...)
	return m, nil
}

// ParseVendorMetadata parses a vendor's meta_data: a JSON or YAML object.
func ParseVendorMetadata(raw []byte) (map[string]any, error) {
	v, err := yaml11.Load(raw)
	if err != nil {
		return nil, err
	}
	switch m := v.(type) {
	case map[string]any:
		return m, nil
	case nil:
		return map[string]any{}, nil
	}
	return nil, fmt.Errorf("want an object, got %T", v)
}
