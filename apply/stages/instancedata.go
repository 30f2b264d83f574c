package stages

import (
	"bufio"
	"bytes"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
)

// InstanceData builds cloud-init's instance-data document (the v1 keys
// with their dashed aliases, ds.meta_data, merged_cfg, sys_info) that
// `query` prints and jinja templates see.
func InstanceData(root *rootfs.Root, s *seed.Seed, merged map[string]any, version string) map[string]any {
	keys := s.PublicKeys
	if keys == nil {
		keys = []string{}
	}
	osr := osRelease(root)
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	v1 := map[string]any{
		"_beta_keys":        []any{"subplatform"},
		"cloud_id":          orNil(strings.ToLower(s.CloudName)),
		"cloud_name":        orNil(s.CloudName),
		"platform":          orNil(s.Platform),
		"subplatform":       orNil(s.Subplatform),
		"instance_id":       s.InstanceID,
		"local_hostname":    orNil(s.LocalHostname),
		"region":            orNil(s.Region),
		"availability_zone": orNil(s.AvailabilityZone),
		"public_ssh_keys":   toAny(keys),
		"kernel_release":    unix.ByteSliceToString(uts.Release[:]),
		"machine":           machine(),
		"distro":            osr["ID"],
		"distro_version":    osr["VERSION_ID"],
		"distro_release":    osr["VERSION_CODENAME"],
		"variant":           osr["ID"],
		"system_platform":   unix.ByteSliceToString(uts.Sysname[:]),
		"seedinit_version":  version,
	}
	for _, k := range []string{"availability_zone", "cloud_name", "instance_id", "local_hostname"} {
		v1[strings.ReplaceAll(k, "_", "-")] = v1[k]
	}
	md := s.Metadata
	if md == nil {
		md = map[string]any{}
	}
	if merged == nil {
		merged = map[string]any{}
	}
	return map[string]any{
		"_beta_keys":          []any{"subplatform"},
		"base64_encoded_keys": []any{},
		"sensitive_keys":      []any{"merged_cfg", "security-credentials", "admin_pass"},
		"v1":                  v1,
		"ds":                  map[string]any{"meta_data": md},
		"merged_cfg":          merged,
		"sys_info":            map[string]any{"dist": []any{osr["ID"], osr["VERSION_ID"], osr["VERSION_CODENAME"]}},
	}
}

// Redacted is the instance data readable by everyone: sensitive keys are
// replaced as cloud-init does in instance-data.json. Beyond cloud-init
// 22.4's keys, admin_pass: Nova's admin password, in meta_data.json on a
// config drive and from the metadata service, which cloud-init 22.4 left
// for every user to read.
func Redacted(data map[string]any) map[string]any {
	sensitive := map[string]bool{}
	if keys, ok := data["sensitive_keys"].([]any); ok {
		for _, k := range keys {
			if s, ok := k.(string); ok {
				sensitive[s] = true
			}
		}
	}
	return redactKeys(data, sensitive).(map[string]any)
}

// redactKeys copies v with every value under a sensitive key, at any
// depth, replaced as cloud-init's redact_sensitive_keys does.
func redactKeys(v any, sensitive map[string]bool) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if sensitive[k] {
				out[k] = "redacted for non-root user"
				continue
			}
			out[k] = redactKeys(e, sensitive)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactKeys(e, sensitive)
		}
		return out
	}
	return v
}

func osRelease(root *rootfs.Root) map[string]any {
	out := map[string]any{"ID": nil, "VERSION_ID": nil, "VERSION_CODENAME": nil}
	b, err := root.ReadFile("/etc/os-release")
	if err != nil {
		b, err = root.ReadFile("/usr/lib/os-release")
		if err != nil {
			return out
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		if _, want := out[k]; want {
			out[k] = strings.Trim(v, `"'`)
		}
	}
	return out
}

func machine() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	case "386":
		return "i686"
	}
	return runtime.GOARCH
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
