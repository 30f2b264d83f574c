package seed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/seed/yaml11"
)

// maxSeedFile caps each file read from a seed directory; user-data beyond
// it is refused rather than read into memory.
const maxSeedFile = 16 << 20

// LoadNoCloudDir reads a NoCloud seed directory (meta-data, user-data,
// vendor-data, network-config), as cloud-init's DataSourceNoCloud does for
// /var/lib/cloud/seed/nocloud. meta-data may be YAML or JSON; a missing
// instance-id is "nocloud", cloud-init's default.
func LoadNoCloudDir(dir string) (*Seed, error) {
	s, err := loadNoCloudDir(dir)
	if err != nil {
		return nil, err
	}
	read := func(name string) ([]byte, error) { return ReadSeedFile(filepath.Join(dir, name), maxSeedFile) }
	where := func(name string) string { return filepath.Join(dir, name) }
	parts := map[string][]byte{}
	for _, part := range PartNames {
		b, err := read(part)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read NoCloud seed: %w", err)
		}
		parts[part] = b
	}
	s.MetaRaw = parts["meta-data"]
	s.Documents = NoCloudDocuments(parts, where, "nocloud")
	m, err := ReadManifest(read, where)
	if err != nil {
		return nil, fmt.Errorf("read NoCloud seed: %w", err)
	}
	if m != nil {
		s.Manifests = append(s.Manifests, *m)
	}
	return s, nil
}

// NoCloudDocuments are the documents of a source in NoCloud's layout: its
// parts as read (a nil part is one it does not have), each meta-data
// document read on its own as NoCloud reads it (defaultID for a missing
// instance-id). where names a file for messages.
func NoCloudDocuments(parts map[string][]byte, where func(name string) string, defaultID string) []Document {
	var docs []Document
	for _, part := range PartNames {
		content := parts[part]
		if content == nil {
			continue
		}
		d := Document{Part: part, Where: where(part), Content: content}
		switch part {
		case "meta-data":
			if m, err := ReadNoCloudMeta(content, defaultID); err != nil {
				d.MetaErr = err.Error()
			} else {
				d.Meta = &m
			}
		case "network-config":
			d.Format, _ = NetworkConfigFormat(content)
		}
		docs = append(docs, d)
	}
	return docs
}

// ReadManifest reads the seed manifest and its signature beside a
// source's parts; nil when it has neither. read returns fs.ErrNotExist
// for a file the source does not have.
func ReadManifest(read func(name string) ([]byte, error), where func(name string) string) (*SignedManifest, error) {
	body, err := read(ManifestFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", where(ManifestFile), err)
	}
	sig, err := read(ManifestSignatureFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", where(ManifestSignatureFile), err)
	}
	if body == nil && sig == nil {
		return nil, nil
	}
	return &SignedManifest{Where: where(ManifestFile), Manifest: body, Signature: sig}, nil
}

func loadNoCloudDir(dir string) (*Seed, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("read NoCloud seed: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("read NoCloud seed %s: not a directory", dir)
	}
	read := func(name string) ([]byte, bool, error) {
		b, err := ReadSeedFile(filepath.Join(dir, name), maxSeedFile)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("read NoCloud seed: %w", err)
		}
		return b, true, nil
	}
	mdRaw, ok, err := read("meta-data")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("read NoCloud seed %s: no meta-data file", dir)
	}
	s, err := NoCloudFromFiles(mdRaw, filepath.Join(dir, "meta-data"))
	if err != nil {
		return nil, err
	}
	s.Subplatform = fmt.Sprintf("seed-dir (%s)", dir)
	if s.UserData, _, err = read("user-data"); err != nil {
		return nil, err
	}
	if s.VendorData, _, err = read("vendor-data"); err != nil {
		return nil, err
	}
	// seedinit's own file: what `seedinit fetch` saved of the datasource's
	// config (Azure's admin user, CloudStack's password).
	if raw, ok, err := read("datasource-config"); err != nil {
		return nil, err
	} else if ok {
		if s.Config, err = loadMapping(raw); err != nil {
			return nil, fmt.Errorf("read NoCloud seed %s: %w", filepath.Join(dir, "datasource-config"), err)
		}
	}
	var netRaw []byte
	if netRaw, ok, err = read("network-config"); err != nil {
		return nil, err
	}
	if ok {
		s.NetworkConfig = netRaw
		s.NetworkFormat, err = NetworkConfigFormat(netRaw)
		if err != nil {
			return nil, fmt.Errorf("read NoCloud seed %s: %w", filepath.Join(dir, "network-config"), err)
		}
		return s, nil
	}
	// A seed written by `seedinit fetch` keeps network configs that need
	// the applying machine's MACs in their own formats.
	for _, alt := range []struct{ file, format string }{{"network_data.json", "network_data.json"}, {"network-interfaces", "eni"}} {
		if netRaw, ok, err = read(alt.file); err != nil {
			return nil, err
		} else if ok {
			s.NetworkConfig, s.NetworkFormat = netRaw, alt.format
			return s, nil
		}
	}
	// A cloud's own layout: network-config.<format> (EC2's per-NIC tree).
	if matches, _ := filepath.Glob(filepath.Join(dir, "network-config.*")); len(matches) > 0 {
		name := filepath.Base(matches[0])
		if netRaw, ok, err = read(name); err != nil {
			return nil, err
		} else if ok {
			s.NetworkConfig, s.NetworkFormat = netRaw, strings.TrimPrefix(name, "network-config.")
		}
	}
	return s, nil
}

// NoCloudFromFiles builds a NoCloud seed from its meta-data; where names
// the file in errors.
func NoCloudFromFiles(metaData []byte, where string) (*Seed, error) {
	m, err := ReadNoCloudMeta(metaData, "nocloud")
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", where, err)
	}
	s := &Seed{Datasource: "NoCloud", Platform: "nocloud", CloudName: "nocloud"}
	s.SetMeta(m)
	return s, nil
}

// ReadNoCloudMeta reads a NoCloud meta-data document (YAML or JSON) on
// its own: NoCloudMeta of its mapping.
func ReadNoCloudMeta(raw []byte, defaultID string) (Meta, error) {
	md, err := loadMapping(raw)
	if err != nil {
		return Meta{}, err
	}
	return NoCloudMeta(md, defaultID)
}

// NoCloudMeta reads NoCloud meta-data as cloud-init's NoCloud does: the
// instance-id (defaultID when the key is missing; an error when it is
// empty), local-hostname or hostname, the zone and region, public-keys
// and network-interfaces. md becomes the tree, the default instance-id
// added.
func NoCloudMeta(md map[string]any, defaultID string) (Meta, error) {
	if _, ok := md["instance-id"]; !ok && defaultID != "" {
		md["instance-id"] = defaultID
	}
	m := Meta{Metadata: md, InstanceID: scalarString(md["instance-id"])}
	if m.InstanceID == "" {
		return Meta{}, errors.New("instance-id is empty")
	}
	m.LocalHostname = scalarString(md["local-hostname"])
	if m.LocalHostname == "" {
		m.LocalHostname = scalarString(md["hostname"])
	}
	m.AvailabilityZone = scalarString(md["availability-zone"])
	if m.AvailabilityZone == "" {
		m.AvailabilityZone = scalarString(md["availability_zone"])
	}
	m.Region = scalarString(md["region"])
	m.PublicKeys = NormalizePublicKeys(md["public-keys"])
	if cn := scalarString(md["cloud-name"]); cn != "" {
		m.CloudName = strings.ToLower(cn)
	}
	if eni := scalarString(md["network-interfaces"]); eni != "" {
		m.NetworkConfig, m.NetworkFormat = []byte(eni), "eni"
	}
	return m, nil
}

// loadMapping parses YAML (JSON included) that must be a mapping; an empty
// document is an empty mapping.
func loadMapping(raw []byte) (map[string]any, error) {
	v, err := yaml11.Load(raw)
	if err != nil {
		return nil, err
	}
	switch m := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return m, nil
	}
	return nil, fmt.Errorf("want a mapping of keys, got %T", v)
}

// NormalizePublicKeys flattens the shapes clouds use for public keys (a
// string of lines, a list, a mapping of name to key or to a list of keys)
// into one list, as cloud-init's normalize_pubkey_data does.
func NormalizePublicKeys(v any) []string {
	var out []string
	add := func(s string) {
		for _, line := range strings.Split(s, "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		}
	}
	switch k := v.(type) {
	case string:
		add(k)
	case []any:
		for _, e := range k {
			if s, ok := e.(string); ok {
				add(s)
			}
		}
	case map[string]any:
		names := make([]string, 0, len(k))
		for n := range k {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, NormalizePublicKeys(k[n])...)
		}
	}
	return out
}

// NetworkConfigFormat tells cloud-init's network config versions apart.
func NetworkConfigFormat(raw []byte) (string, error) {
	v, err := yaml11.Load(raw)
	if err != nil {
		return "", err
	}
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return "", nil
		}
		return "", fmt.Errorf("want a mapping, got %T", v)
	}
	if inner, ok := m["network"].(map[string]any); ok {
		m = inner
	}
	if c, ok := m["config"].(string); ok && c == "disabled" {
		return "disabled", nil
	}
	switch fmt.Sprint(m["version"]) {
	case "1":
		return "v1", nil
	case "2":
		return "v2", nil
	}
	return "", fmt.Errorf("network config has no version 1 or 2")
}

func scalarString(v any) string {
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(s)
	case float64:
		return yaml11.FormatFloat(s)
	case map[string]any, []any:
		return ""
	}
	return fmt.Sprint(v)
}
