package ds

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seedinit/seedinit/internal/atomicfile"
	"github.com/seedinit/seedinit/seed"
)

// FetchToDir writes a seed as a NoCloud seed directory that `seedinit
// apply --seed DIR` reads back: meta-data (JSON, which is YAML), user-data,
// vendor-data, datasource-config (the datasource's own cloud-config, a
// seedinit addition), network-config (cloud-init v1/v2) or network_data.json /
// network-interfaces (OpenStack JSON and ENI, as they came), and instance-data.json
// with the datasource's name, the v1 keys and the raw metadata, for bug
// reports. Files are 0600 in a 0700 directory: user-data may hold secrets.
// Files of an earlier fetch that this seed lacks are removed, so the
// directory is exactly this seed.
func FetchToDir(s *seed.Seed, dir string) error {
	if s == nil {
		return errors.New("write seed: no seed")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write seed to %s: %w", dir, err)
	}
	files, err := SeedFiles(s)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, name := range seedFileNames {
		p := filepath.Join(dir, name)
		data, ok := files[name]
		if !ok {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove stale %s: %w", p, err))
			}
			continue
		}
		if err := atomicfile.Write(p, data, 0o600); err != nil {
			errs = append(errs, fmt.Errorf("write seed file %s: %w", p, err))
		}
	}
	// A cloud's own network layout (network-config.<format>).
	for name, data := range files {
		if !slices.Contains(seedFileNames, name) {
			p := filepath.Join(dir, name)
			if err := atomicfile.Write(p, data, 0o600); err != nil {
				errs = append(errs, fmt.Errorf("write seed file %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

// seedFileNames are every file FetchToDir may write.
var seedFileNames = []string{
	"meta-data", "user-data", "vendor-data", "datasource-config", "network-config",
	"network_data.json", "network-interfaces", "instance-data.json",
}

// SeedFiles renders a seed as the files FetchToDir writes.
func SeedFiles(s *seed.Seed) (map[string][]byte, error) {
	md := map[string]any{}
	for k, v := range s.Metadata {
		md[k] = v
	}
	// NoCloud's names, so the directory reads back as the same instance.
	setIf := func(k, v string) {
		if v != "" {
			md[k] = v
		}
	}
	setIf("instance-id", s.InstanceID)
	setIf("local-hostname", s.LocalHostname)
	setIf("availability-zone", s.AvailabilityZone)
	setIf("region", s.Region)
	if len(s.PublicKeys) > 0 {
		keys := make([]any, len(s.PublicKeys))
		for i, k := range s.PublicKeys {
			keys[i] = k
		}
		md["public-keys"] = keys
	}
	// NoCloud would take a network-interfaces key as ENI over our
	// network-config; the network config is carried by its own file.
	delete(md, "network-interfaces")
	mdJSON, err := json.MarshalIndent(md, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode meta-data: %w", err)
	}
	files := map[string][]byte{
		"meta-data": append(mdJSON, '\n'),
		"user-data": nonNil(s.UserData),
	}
	if s.VendorData != nil {
		files["vendor-data"] = s.VendorData
	}
	if len(s.Config) > 0 {
		cfg, err := json.MarshalIndent(s.Config, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode datasource-config: %w", err)
		}
		files["datasource-config"] = append(cfg, '\n')
	}
	switch s.NetworkFormat {
	case "":
	case "v1", "v2", "disabled":
		files["network-config"] = s.NetworkConfig
	case "network_data.json":
		// Converting needs the MACs of the machine that applies it (NICs
		// are named by MAC), so the raw file is kept for that machine.
		files["network_data.json"] = s.NetworkConfig
	case "eni":
		files["network-interfaces"] = s.NetworkConfig
	default:
		// A cloud's own layout (EC2's per-NIC tree and the like), kept
		// under its name; the NoCloud loader reads it back with its format.
		files["network-config."+strings.ReplaceAll(s.NetworkFormat, "/", "_")] = s.NetworkConfig
	}
	idata, err := json.MarshalIndent(InstanceData(s), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode instance-data.json: %w", err)
	}
	files["instance-data.json"] = append(idata, '\n')
	return files, nil
}

// InstanceData is the datasource part of cloud-init's instance-data.json:
// the v1 keys (with their dashed aliases) and ds.meta_data. The stages
// add the system and merged config parts when they run.
func InstanceData(s *seed.Seed) map[string]any {
	keys := make([]any, 0, len(s.PublicKeys))
	for _, k := range s.PublicKeys {
		keys = append(keys, k)
	}
	orNull := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	v1 := map[string]any{
		"_beta_keys":        []any{"subplatform"},
		"datasource":        s.Datasource,
		"cloud_id":          orNull(strings.ToLower(s.CloudName)),
		"cloud_name":        orNull(s.CloudName),
		"platform":          orNull(s.Platform),
		"subplatform":       orNull(s.Subplatform),
		"instance_id":       s.InstanceID,
		"local_hostname":    orNull(s.LocalHostname),
		"region":            orNull(s.Region),
		"availability_zone": orNull(s.AvailabilityZone),
		"public_ssh_keys":   keys,
	}
	for _, k := range []string{"availability_zone", "cloud_name", "instance_id", "local_hostname"} {
		v1[strings.ReplaceAll(k, "_", "-")] = v1[k]
	}
	md := s.Metadata
	if md == nil {
		md = map[string]any{}
	}
	return map[string]any{
		"_beta_keys":          []any{"subplatform"},
		"base64_encoded_keys": []any{},
		"sensitive_keys":      []any{"merged_cfg", "security-credentials", "admin_pass"},
		"v1":                  v1,
		"ds":                  map[string]any{"meta_data": jsonSafe(md)},
	}
}

// jsonSafe turns YAML's map[any]any, should any slip through, into
// string-keyed maps encoding/json accepts.
func jsonSafe(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = jsonSafe(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[fmt.Sprint(k)] = jsonSafe(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = jsonSafe(e)
		}
		return out
	case []byte:
		return string(t)
	}
	return v
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
