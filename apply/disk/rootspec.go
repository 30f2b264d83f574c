package disk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// RootFromCmdline returns the value of the first root= on a kernel
// command line, as cloud-init's rootdev_from_cmdline reads it.
func RootFromCmdline(cmdline string) (string, bool) {
	for _, tok := range strings.Fields(cmdline) {
		if v, ok := strings.CutPrefix(tok, "root="); ok {
			return v, true
		}
	}
	return "", false
}

// ErrNotFound means no block device matches a spec.
var ErrNotFound = errors.New("no such block device")

// byLinks maps udev's /dev/disk/by-* directories to the spec they stand
// for: without udev (an initramfs) the links do not exist, so seedinit
// finds the device by the same property.
var byLinks = map[string]string{
	"by-label":     "LABEL",
	"by-uuid":      "UUID",
	"by-partuuid":  "PARTUUID",
	"by-partlabel": "PARTLABEL",
}

// Resolve finds the block device a root= style spec names: /dev/NAME,
// /dev/disk/by-{label,uuid,partuuid,partlabel}/X, LABEL=, UUID=,
// PARTUUID=, PARTLABEL= or MAJOR:MINOR. Labels and UUIDs come from the
// filesystems' superblocks and the partition tables, not from blkid or
// udev.
func (h Host) Resolve(spec string) (BlockDev, error) {
	if dir, name, ok := strings.Cut(strings.TrimPrefix(spec, "/dev/disk/"), "/"); ok && strings.HasPrefix(spec, "/dev/disk/") {
		if kind, known := byLinks[dir]; known {
			if b, err := h.resolvePath(spec); err == nil {
				return b, nil
			}
			spec = kind + "=" + unescapeUdev(name)
		}
	}
	kind, value, _ := strings.Cut(spec, "=")
	switch {
	case strings.HasPrefix(spec, "/"):
		return h.resolvePath(spec)
	case kind == "LABEL" || kind == "UUID":
		return h.findFS(kind, value)
	case kind == "PARTUUID" || kind == "PARTLABEL":
		if strings.Contains(value, "/") {
			return BlockDev{}, fmt.Errorf("resolve %s: PARTNROFF is not supported", spec)
		}
		return h.findPartition(kind, value)
	}
	if maj, mnr, err := parseMajMin(spec); err == nil {
		return h.BlockDevice(maj, mnr)
	}
	return BlockDev{}, fmt.Errorf("resolve %q: not a /dev path, LABEL=, UUID=, PARTUUID=, PARTLABEL= or MAJOR:MINOR", spec)
}

// unescapeUdev undoes udev's \x2f escapes in by-label names.
func unescapeUdev(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// resolvePath finds a /dev path's device: the node's device number when
// it exists, else the kernel name (a /dev without the node yet).
func (h Host) resolvePath(p string) (BlockDev, error) {
	hostPath := filepath.Join(h.Dev, strings.TrimPrefix(p, "/dev/"))
	var st unix.Stat_t
	if err := unix.Stat(hostPath, &st); err == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFBLK {
			return BlockDev{}, fmt.Errorf("resolve %s: not a block device", p)
		}
		return h.BlockDevice(unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)))
	}
	b, err := h.BlockDeviceByName(filepath.Base(p))
	if err != nil {
		return BlockDev{}, fmt.Errorf("resolve %s: %w (%w)", p, ErrNotFound, err)
	}
	return b, nil
}

// blockDevices lists every block device sysfs knows, by name.
func (h Host) blockDevices() ([]BlockDev, error) {
	entries, err := os.ReadDir(filepath.Join(h.Sys, "class", "block"))
	if err != nil {
		return nil, fmt.Errorf("list block devices: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var devs []BlockDev
	for _, e := range entries {
		b, err := h.BlockDeviceByName(e.Name())
		if err != nil || b.Size == 0 {
			continue
		}
		devs = append(devs, b)
	}
	return devs, nil
}

func (h Host) openDev(b BlockDev) (*os.File, func(), error) {
	if h.Opening != nil && !h.Opening(b.Name) {
		return nil, nil, fmt.Errorf("open %s: left out: it stalled an earlier read", b.Name)
	}
	p, done, err := h.Node(b.Name, b.Major, b.Minor)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		done()
		return nil, nil, err
	}
	return f, func() { f.Close(); done() }, nil
}

func (h Host) findFS(kind, value string) (BlockDev, error) {
	devs, err := h.blockDevices()
	if err != nil {
		return BlockDev{}, err
	}
	for _, b := range devs {
		f, done, err := h.openDev(b)
		if err != nil {
			continue
		}
		fs, err := Probe(f)
		done()
		if err != nil {
			continue
		}
		if kind == "LABEL" && fs.Label == value || kind == "UUID" && strings.EqualFold(fs.UUID, value) {
			return b, nil
		}
	}
	return BlockDev{}, fmt.Errorf("resolve %s=%s: %w", kind, value, ErrNotFound)
}

// findPartition reads the partition tables of every disk for a partition
// whose GPT unique GUID (or MBR "DISKID-NN"), or GPT name, matches.
func (h Host) findPartition(kind, value string) (BlockDev, error) {
	devs, err := h.blockDevices()
	if err != nil {
		return BlockDev{}, err
	}
	for _, disk := range devs {
		if disk.Partition != 0 {
			continue
		}
		n, err := h.matchPartition(disk, kind, value)
		if err != nil || n == 0 {
			continue
		}
		parts, err := h.partitionsOf(disk)
		if err != nil {
			return BlockDev{}, err
		}
		for _, p := range parts {
			if p.Partition == n {
				return p, nil
			}
		}
		return BlockDev{}, fmt.Errorf("resolve %s=%s: partition %d of %s matches but the kernel has not added it", kind, value, n, disk.Name)
	}
	return BlockDev{}, fmt.Errorf("resolve %s=%s: %w", kind, value, ErrNotFound)
}

func (h Host) matchPartition(disk BlockDev, kind, value string) (int, error) {
	f, done, err := h.openDev(disk)
	if err != nil {
		return 0, err
	}
	defer done()
	dev := &File{f: f, name: disk.Name}
	if err := dev.init(); err != nil {
		return 0, err
	}
	return MatchPartition(dev, kind, value)
}

// MatchPartition returns the number of the partition on dev whose
// PARTUUID or PARTLABEL is value, 0 if none.
func MatchPartition(dev Device, kind, value string) (int, error) {
	m, err := ReadMBR(dev)
	if err == nil {
		if kind != "PARTUUID" {
			return 0, nil
		}
		for _, p := range m.Partitions {
			if strings.EqualFold(fmt.Sprintf("%08x-%02x", m.DiskID, p.Number), value) {
				return p.Number, nil
			}
		}
		return 0, nil
	}
	g, err := ReadGPT(dev)
	if err != nil {
		return 0, err
	}
	for _, e := range g.Entries {
		if kind == "PARTUUID" && strings.EqualFold(e.ID.String(), value) || kind == "PARTLABEL" && e.Name == value {
			return e.Number, nil
		}
	}
	return 0, nil
}
