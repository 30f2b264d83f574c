package system

import (
	"strings"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// osRelease is the part of /etc/os-release that picks a distro's layout.
type osRelease struct {
	ID     string
	IDLike []string
}

// readOSRelease reads /etc/os-release (or /usr/lib/os-release) from the
// target; a target without one reads as empty.
func readOSRelease(root *rootfs.Root) osRelease {
	var data []byte
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		if b, err := root.ReadFile(p); err == nil {
			data = b
			break
		}
	}
	return parseOSRelease(string(data))
}

func parseOSRelease(text string) osRelease {
	var r osRelease
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		v = unquoteShell(v)
		switch k {
		case "ID":
			r.ID = strings.ToLower(v)
		case "ID_LIKE":
			r.IDLike = strings.Fields(strings.ToLower(v))
		}
	}
	return r
}

// unquoteShell removes one level of shell quoting from a simple value.
func unquoteShell(v string) string {
	if len(v) < 2 || (v[0] != '"' && v[0] != '\'') || v[len(v)-1] != v[0] {
		return v
	}
	quote := v[0]
	v = v[1 : len(v)-1]
	if quote == '"' {
		v = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\$`, `$`, "\\`", "`").Replace(v)
	}
	return v
}

// cloudInitDistros are the distro names cloud-init's modules key their
// templates and client tables by.
var cloudInitDistros = map[string]bool{
	"almalinux": true, "alpine": true, "arch": true, "centos": true, "cloudlinux": true, "cos": true,
	"debian": true, "eurolinux": true, "fedora": true, "freebsd": true, "gentoo": true, "mariner": true,
	"miraclelinux": true, "openbsd": true, "openEuler": true, "openmandriva": true, "opensuse": true,
	"photon": true, "rhel": true, "rocky": true, "sles": true, "ubuntu": true, "virtuozzo": true,
}

// distro is cloud-init's distro name for the target: its ID when
// cloud-init knows it, else the first ID_LIKE it knows, else debian (the
// layout most appliances based on busybox or Debian share).
func (r osRelease) distro() string {
	if cloudInitDistros[r.ID] {
		return r.ID
	}
	for _, like := range r.IDLike {
		if cloudInitDistros[like] {
			return like
		}
	}
	return "debian"
}

// family is the base distro whose file layout the target shares, or ""
// when the target names no distro cloud-init knows (buildroot, busybox).
func (r osRelease) family() string {
	known := cloudInitDistros[r.ID]
	for _, like := range r.IDLike {
		known = known || cloudInitDistros[like]
	}
	if !known {
		return ""
	}
	switch d := r.distro(); d {
	case "ubuntu", "debian":
		return "debian"
	case "almalinux", "centos", "cloudlinux", "eurolinux", "fedora", "mariner", "miraclelinux",
		"openEuler", "openmandriva", "photon", "rhel", "rocky", "virtuozzo":
		return "rhel"
	case "opensuse", "sles":
		return "suse"
	default:
		return d
	}
}
