package disk

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Host is where the kernel's views live: procfs, sysfs and /dev. Tests
// point it at fake trees; DefaultHost is the running system.
type Host struct {
	Proc string
	Sys  string
	Dev  string
	// Opening, when set, is told each device's name before Resolve opens
	// it, and false leaves the device out: PID 1 runs Resolve in a helper
	// it can abandon, and skips a device that stalled an earlier one.
	Opening func(name string) bool
}

// DefaultHost is the running system's /proc, /sys and /dev.
var DefaultHost = Host{Proc: "/proc", Sys: "/sys", Dev: "/dev"}

// Mount is one line of /proc/self/mountinfo.
type Mount struct {
	ID, Parent   int
	Major, Minor uint32
	Root         string
	MountPoint   string
	Options      string
	FSType       string
	Source       string
	SuperOptions string
}

// ParseMountInfo parses /proc/<pid>/mountinfo (proc(5)).
func ParseMountInfo(r io.Reader) ([]Mount, error) {
	var mounts []Mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if strings.TrimSpace(text) == "" {
			continue
		}
		m, err := parseMountLine(text)
		if err != nil {
			return nil, fmt.Errorf("parse mountinfo line %d: %w", line, err)
		}
		mounts = append(mounts, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return mounts, nil
}

func parseMountLine(text string) (Mount, error) {
	var m Mount
	f := strings.Fields(text)
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if len(f) < 7 || sep < 0 || len(f) < sep+3 {
		return m, fmt.Errorf("want at least 10 fields with a \"-\" separator, got %q", text)
	}
	var err error
	if m.ID, err = strconv.Atoi(f[0]); err != nil {
		return m, fmt.Errorf("mount id %q: %w", f[0], err)
	}
	if m.Parent, err = strconv.Atoi(f[1]); err != nil {
		return m, fmt.Errorf("parent id %q: %w", f[1], err)
	}
	if m.Major, m.Minor, err = parseMajMin(f[2]); err != nil {
		return m, err
	}
	m.Root = unescapeMount(f[3])
	m.MountPoint = unescapeMount(f[4])
	m.Options = f[5]
	m.FSType = unescapeMount(f[sep+1])
	m.Source = unescapeMount(f[sep+2])
	if len(f) > sep+3 {
		m.SuperOptions = f[sep+3]
	}
	return m, nil
}

func parseMajMin(s string) (uint32, uint32, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return 0, 0, fmt.Errorf("device number %q is not MAJOR:MINOR", s)
	}
	maj, err1 := strconv.ParseUint(a, 10, 32)
	mnr, err2 := strconv.ParseUint(b, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("device number %q is not MAJOR:MINOR", s)
	}
	return uint32(maj), uint32(mnr), nil
}

// unescapeMount undoes the kernel's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) && isOctal(s[i+1:i+4]) {
			v, _ := strconv.ParseUint(s[i+1:i+4], 8, 8)
			b.WriteByte(byte(v))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 || s[0] > '3' {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '7' {
			return false
		}
	}
	return true
}

// Mounts reads the running system's mount table.
func (h Host) Mounts() ([]Mount, error) {
	f, err := os.Open(filepath.Join(h.Proc, "self", "mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	return ParseMountInfo(f)
}

// MountOf finds the mount that holds path: the longest mount point that
// is path or a parent of it, the last one mounted when several stack.
func (h Host) MountOf(path string) (Mount, error) {
	mounts, err := h.Mounts()
	if err != nil {
		return Mount{}, err
	}
	m, ok := mountOf(mounts, filepath.Clean(path))
	if !ok {
		return Mount{}, fmt.Errorf("find the mount holding %s: no mount point covers it", path)
	}
	return m, nil
}

func mountOf(mounts []Mount, path string) (Mount, bool) {
	var best Mount
	found := false
	for _, m := range mounts {
		mp := m.MountPoint
		if mp != path && mp != "/" && !strings.HasPrefix(path, mp+"/") {
			continue
		}
		if !strings.HasPrefix(path, "/") {
			continue
		}
		if !found || len(mp) >= len(best.MountPoint) {
			best, found = m, true
		}
	}
	return best, found
}

// BlockDev is a block device as sysfs describes it. Start and Size are in
// 512-byte units, as sysfs reports them whatever the sector size.
type BlockDev struct {
	Name         string
	Major, Minor uint32
	SysPath      string
	// Partition is the partition number, 0 for a whole disk.
	Partition int
	Start     uint64
	Size      uint64
	// Disk is the whole disk a partition belongs to.
	Disk                 string
	DiskMajor, DiskMinor uint32
	// DMName is set for device-mapper devices (LVM, LUKS, multipath).
	DMName string
	// MD is true for software RAID devices.
	MD bool
}

// ErrUnsupportedDevice marks devices growpart cannot grow: device-mapper,
// software RAID, whole disks.
var ErrUnsupportedDevice = errors.New("unsupported device")

// BlockDevice describes the block device MAJOR:MINOR from sysfs.
func (h Host) BlockDevice(major, minor uint32) (BlockDev, error) {
	b := BlockDev{Major: major, Minor: minor}
	link := filepath.Join(h.Sys, "dev", "block", fmt.Sprintf("%d:%d", major, minor))
	real, err := filepath.EvalSymlinks(link)
	if err != nil {
		return b, fmt.Errorf("find block device %d:%d in sysfs: %w", major, minor, err)
	}
	b.SysPath = real
	b.Name = filepath.Base(real)
	if b.Size, err = readUint(filepath.Join(real, "size")); err != nil {
		return b, fmt.Errorf("read size of %s: %w", b.Name, err)
	}
	if name, err := os.ReadFile(filepath.Join(real, "dm", "name")); err == nil {
		b.DMName = strings.TrimSpace(string(name))
	}
	if _, err := os.Stat(filepath.Join(real, "md")); err == nil {
		b.MD = true
	}
	pn, err := readUint(filepath.Join(real, "partition"))
	if errors.Is(err, os.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		return b, fmt.Errorf("read partition number of %s: %w", b.Name, err)
	}
	b.Partition = int(pn)
	if b.Start, err = readUint(filepath.Join(real, "start")); err != nil {
		return b, fmt.Errorf("read start of %s: %w", b.Name, err)
	}
	parent := filepath.Dir(real)
	b.Disk = filepath.Base(parent)
	dev, err := os.ReadFile(filepath.Join(parent, "dev"))
	if err != nil {
		return b, fmt.Errorf("read the disk of %s: %w", b.Name, err)
	}
	if b.DiskMajor, b.DiskMinor, err = parseMajMin(string(dev)); err != nil {
		return b, fmt.Errorf("read the disk of %s: %w", b.Name, err)
	}
	return b, nil
}

// BlockDeviceByName describes the block device the kernel calls name.
func (h Host) BlockDeviceByName(name string) (BlockDev, error) {
	dev, err := os.ReadFile(filepath.Join(h.Sys, "class", "block", name, "dev"))
	if err != nil {
		return BlockDev{}, fmt.Errorf("find block device %s in sysfs: %w", name, err)
	}
	maj, mnr, err := parseMajMin(string(dev))
	if err != nil {
		return BlockDev{}, fmt.Errorf("find block device %s in sysfs: %w", name, err)
	}
	return h.BlockDevice(maj, mnr)
}

// CheckGrowable says why a device cannot be grown as a partition.
func (b BlockDev) CheckGrowable() error {
	switch {
	case b.DMName != "":
		return fmt.Errorf("%s is device-mapper device %q (LVM, LUKS or multipath): growing it is %w; grow the partition under it with `seedinit growpart DISK N`, then the volume with its own tools",
			b.Name, b.DMName, ErrUnsupportedDevice)
	case b.MD:
		return fmt.Errorf("%s is a software RAID (md) device: growing it is %w", b.Name, ErrUnsupportedDevice)
	case b.Partition == 0:
		return fmt.Errorf("%s is a whole disk, not a partition: %w", b.Name, ErrUnsupportedDevice)
	}
	return nil
}

// partitionsOf lists the kernel's partitions of disk.
func (h Host) partitionsOf(disk BlockDev) ([]BlockDev, error) {
	entries, err := os.ReadDir(disk.SysPath)
	if err != nil {
		return nil, fmt.Errorf("list partitions of %s: %w", disk.Name, err)
	}
	var parts []BlockDev
	for _, e := range entries {
		dev, err := os.ReadFile(filepath.Join(disk.SysPath, e.Name(), "dev"))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(disk.SysPath, e.Name(), "partition")); err != nil {
			continue
		}
		maj, mnr, err := parseMajMin(string(dev))
		if err != nil {
			continue
		}
		p, err := h.BlockDevice(maj, mnr)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// PartitionName is the kernel's name for partition n of disk: disks whose
// names end in a digit (nvme0n1, mmcblk0, loop0, md0) put a "p" between.
func PartitionName(disk string, n int) string {
	if disk != "" && disk[len(disk)-1] >= '0' && disk[len(disk)-1] <= '9' {
		return fmt.Sprintf("%sp%d", disk, n)
	}
	return fmt.Sprintf("%s%d", disk, n)
}

// SplitPartitionName undoes PartitionName for a name known to be a
// partition (vda1, sda12, xvda1, nvme0n1p2, mmcblk0p1, loop0p3).
func SplitPartitionName(name string) (disk string, n int, ok bool) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) || i == 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(name[i:])
	if err != nil || n == 0 {
		return "", 0, false
	}
	disk = name[:i]
	if len(disk) >= 2 && disk[len(disk)-1] == 'p' && disk[len(disk)-2] >= '0' && disk[len(disk)-2] <= '9' {
		disk = disk[:len(disk)-1]
	}
	return disk, n, true
}

// Node gives a path to a /dev node for MAJOR:MINOR: /dev/<name> or
// /dev/block/MAJ:MIN when they are that device, else a node made with
// mknod in a private temporary directory (an initramfs without udev, or
// partitions added by BLKPG on a system without devtmpfs events). done
// removes what was made.
func (h Host) Node(name string, major, minor uint32) (path string, done func(), err error) {
	want := unix.Mkdev(major, minor)
	for _, p := range []string{filepath.Join(h.Dev, name), filepath.Join(h.Dev, "block", fmt.Sprintf("%d:%d", major, minor))} {
		var st unix.Stat_t
		if name == "" && p == filepath.Join(h.Dev, name) {
			continue
		}
		if unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK && uint64(st.Rdev) == want {
			return p, func() {}, nil
		}
	}
	dir, err := os.MkdirTemp("", "seedinit-dev-")
	if err != nil {
		return "", nil, fmt.Errorf("make a node for %d:%d: %w", major, minor, err)
	}
	p := filepath.Join(dir, "dev")
	if err := unix.Mknod(p, unix.S_IFBLK|0o600, int(want)); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("make a node for %s (%d:%d): mknod: %w", name, major, minor, err)
	}
	return p, func() { os.RemoveAll(dir) }, nil
}
