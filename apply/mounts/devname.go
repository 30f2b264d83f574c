package mounts

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// shortDeviceName is cloud-init's list of bare kernel names that mean
// /dev/<name>: sda, sda1, xvdb, hda, vdd1, sr0.
var shortDeviceName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(x?[shv]d[a-z][0-9]*|sr[0-9]+)$`) })

// networkName is "server:/path" (NFS and friends), passed through as is.
var networkName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^.+:.*`) })

// Devices answers the questions cloud-init asks of the running kernel's
// /dev and /sys/block while it resolves a device name. The devices are the
// machine's, not the target root's: in offline mode they are the host's.
type Devices interface {
	// Exists reports whether a path (absolute, or relative to "/") exists.
	Exists(path string) bool
	// IsBlockDevice reports whether dev (a path) is a whole disk in
	// /sys/block and, when part is not empty, part is a partition of it.
	IsBlockDevice(dev, part string) bool
}

// HostDevices looks at the host's /dev and /sys under Dir ("" means "/"),
// which tests point at a fake tree.
type HostDevices struct{ Dir string }

func (h HostDevices) path(p string) string {
	dir := h.Dir
	if dir == "" {
		dir = "/"
	}
	return filepath.Join(dir, p)
}

func (h HostDevices) Exists(p string) bool {
	_, err := os.Stat(h.path(p))
	return err == nil
}

// realBase is the last element of p with symlinks resolved, as
// os.path.realpath would give it (a missing path resolves as far as it can).
func (h HostDevices) realBase(p string) string {
	full := h.path(p)
	if r, err := filepath.EvalSymlinks(full); err == nil {
		full = r
	}
	return filepath.Base(full)
}

func (h HostDevices) IsBlockDevice(dev, part string) bool {
	sys := filepath.Join("/sys/block", h.realBase(dev))
	if part != "" {
		sys = filepath.Join(sys, h.realBase(part))
	}
	return h.Exists(sys)
}

// isMetaDeviceName reports whether name is a metadata service's name for a
// device (ami, root, swap, ephemeral0, ebs1) that the datasource maps.
func isMetaDeviceName(name string) bool {
	switch name {
	case "ami", "root", "swap":
		return true
	}
	for _, prefix := range []string{"ephemeral", "ebs"} {
		if strings.HasPrefix(name, prefix) && !strings.Contains(name, ":") {
			return true
		}
	}
	return false
}

// Resolver turns the names users write in mounts into device paths, as
// cloud-init's sanitize_devname does.
type Resolver struct {
	Devices Devices
	// Aliases is cloud-config's device_aliases (name -> device).
	Aliases map[string]string
	// MetaDevice maps a metadata name (ephemeral0, swap, ebs1) to a device
	// name or path; "" means the datasource does not know it.
	MetaDevice func(name string) string
}

// Sanitize returns the device path for name, or "" when the device cannot
// be found (cloud-init's None).
func (r Resolver) Sanitize(start string) string {
	devname := start
	if devname == "ephemeral" {
		// cloud-init accepts "ephemeral" for the EC2-correct "ephemeral0".
		devname = "ephemeral0"
	}
	if networkName().MatchString(start) {
		return start
	}
	devicePath, partNumber := splitDotted(devname)
	if alias, ok := r.Aliases[devicePath]; ok {
		devicePath = alias
	}
	if isMetaDeviceName(devicePath) {
		mapped := ""
		if r.MetaDevice != nil {
			mapped = r.MetaDevice(devicePath)
		}
		if mapped == "" {
			return ""
		}
		devicePath = mapped
		if !strings.HasPrefix(devicePath, "/") {
			devicePath = "/dev/" + devicePath
		}
	} else if shortDeviceName().MatchString(start) {
		devicePath = "/dev/" + devicePath
	}
	var partPath string
	if partNumber == "" {
		partPath = r.nthPartition(devicePath, "1")
	} else {
		partPath = r.nthPartition(devicePath, partNumber)
		if partPath == "" {
			return ""
		}
	}
	if r.Devices == nil || !r.Devices.IsBlockDevice(devicePath, partPath) {
		return ""
	}
	if partPath != "" {
		return partPath
	}
	return devicePath
}

// splitDotted splits "name.N" at the last dot into a device and a
// partition number, as cloud-init's expand_dotted_devname does.
func splitDotted(s string) (device, part string) {
	if i := strings.LastIndex(s, "."); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

func (r Resolver) nthPartition(device, n string) string {
	if r.Devices == nil {
		return ""
	}
	for _, suffix := range []string{n, "p" + n, "-part" + n} {
		if r.Devices.Exists(device + suffix) {
			return device + suffix
		}
	}
	return ""
}
