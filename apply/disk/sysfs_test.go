package disk

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMountInfo(t *testing.T) {
	in := `22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
36 22 0:31 / /mnt/my\040disk rw - btrfs /dev/loop0p1 rw,space_cache=v2
37 22 253:0 / /data rw master:2 shared:3 - xfs /dev/mapper/vg-data rw
`
	got, err := ParseMountInfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{ID: 22, Parent: 1, Major: 252, Minor: 1, Root: "/", MountPoint: "/", Options: "rw,relatime", FSType: "ext4", Source: "/dev/vda1", SuperOptions: "rw"},
		{ID: 36, Parent: 22, Major: 0, Minor: 31, Root: "/", MountPoint: "/mnt/my disk", Options: "rw", FSType: "btrfs", Source: "/dev/loop0p1", SuperOptions: "rw,space_cache=v2"},
		{ID: 37, Parent: 22, Major: 253, Minor: 0, Root: "/", MountPoint: "/data", Options: "rw", FSType: "xfs", Source: "/dev/mapper/vg-data", SuperOptions: "rw"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, tt := range []struct{ path, want string }{
		{"/", "/"}, {"/etc", "/"}, {"/data", "/data"}, {"/data/x", "/data"}, {"/datax", "/"}, {"/mnt/my disk/f", "/mnt/my disk"},
	} {
		m, ok := mountOf(got, tt.path)
		if !ok || m.MountPoint != tt.want {
			t.Errorf("mountOf(%s) = %q, want %q", tt.path, m.MountPoint, tt.want)
		}
	}
	if _, err := ParseMountInfo(strings.NewReader("1 2 3\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad line: error %v, want one naming line 1", err)
	}
}

func TestPartitionNames(t *testing.T) {
	tests := []struct {
		disk string
		n    int
		name string
	}{
		{"vda", 1, "vda1"}, {"sda", 12, "sda12"}, {"xvda", 1, "xvda1"},
		{"nvme0n1", 2, "nvme0n1p2"}, {"mmcblk0", 1, "mmcblk0p1"}, {"loop0", 3, "loop0p3"}, {"md127", 1, "md127p1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PartitionName(tt.disk, tt.n); got != tt.name {
				t.Errorf("PartitionName(%s, %d) = %s", tt.disk, tt.n, got)
			}
			disk, n, ok := SplitPartitionName(tt.name)
			if !ok || disk != tt.disk || n != tt.n {
				t.Errorf("SplitPartitionName(%s) = %s %d %v", tt.name, disk, n, ok)
			}
		})
	}
	for _, bad := range []string{"vda", "", "123", "sda0"} {
		if _, _, ok := SplitPartitionName(bad); ok {
			t.Errorf("SplitPartitionName(%q) accepted", bad)
		}
	}
}

// fakeSys builds a sysfs tree: /sys/devices/.../DISK/PART, with
// /sys/dev/block and /sys/class/block links, as the kernel lays it out.
type fakeSys struct {
	t    *testing.T
	root string
}

func newFakeSys(t *testing.T) *fakeSys {
	return &fakeSys{t: t, root: t.TempDir()}
}

func (f *fakeSys) host() Host {
	return Host{Proc: filepath.Join(f.root, "proc"), Sys: filepath.Join(f.root, "sys"), Dev: filepath.Join(f.root, "dev")}
}

func (f *fakeSys) write(rel, content string) {
	p := filepath.Join(f.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeSys) link(rel, target string) {
	p := filepath.Join(f.root, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Symlink(target, p); err != nil {
		f.t.Fatal(err)
	}
}

// dev adds a block device at devices path dir (relative to /sys).
func (f *fakeSys) dev(dir, majmin string, size uint64, partition int, start uint64) {
	name := filepath.Base(dir)
	f.write(filepath.Join("sys", dir, "dev"), majmin+"\n")
	f.write(filepath.Join("sys", dir, "size"), itoa(size)+"\n")
	if partition > 0 {
		f.write(filepath.Join("sys", dir, "partition"), itoa(uint64(partition))+"\n")
		f.write(filepath.Join("sys", dir, "start"), itoa(start)+"\n")
	}
	f.link(filepath.Join("sys", "dev", "block", majmin), filepath.Join("..", "..", dir))
	f.link(filepath.Join("sys", "class", "block", name), filepath.Join("..", "..", dir))
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

func TestBlockDeviceFamilies(t *testing.T) {
	f := newFakeSys(t)
	f.dev("devices/pci0000:00/0000:00:04.0/virtio1/block/vda", "252:0", 41943040, 0, 0)
	f.dev("devices/pci0000:00/0000:00:04.0/virtio1/block/vda/vda1", "252:1", 41940992, 1, 2048)
	f.dev("devices/pci0000:00/0000:00:01.0/nvme/nvme0/nvme0n1", "259:0", 2000000, 0, 0)
	f.dev("devices/pci0000:00/0000:00:01.0/nvme/nvme0/nvme0n1/nvme0n1p2", "259:2", 1000000, 2, 4096)
	f.dev("devices/platform/mmc/mmc0/mmc0:0001/block/mmcblk0", "179:0", 3000000, 0, 0)
	f.dev("devices/platform/mmc/mmc0/mmc0:0001/block/mmcblk0/mmcblk0p1", "179:1", 2000000, 1, 8192)
	f.dev("devices/virtual/block/loop0", "7:0", 409600, 0, 0)
	f.dev("devices/virtual/block/loop0/loop0p1", "259:7", 400000, 1, 2048)
	f.dev("devices/virtual/block/dm-0", "253:0", 400000, 0, 0)
	f.write("sys/devices/virtual/block/dm-0/dm/name", "vg-root\n")
	h := f.host()

	tests := []struct {
		majmin string
		want   BlockDev
	}{
		{"252:1", BlockDev{Name: "vda1", Major: 252, Minor: 1, Partition: 1, Start: 2048, Size: 41940992, Disk: "vda", DiskMajor: 252}},
		{"259:2", BlockDev{Name: "nvme0n1p2", Major: 259, Minor: 2, Partition: 2, Start: 4096, Size: 1000000, Disk: "nvme0n1", DiskMajor: 259}},
		{"179:1", BlockDev{Name: "mmcblk0p1", Major: 179, Minor: 1, Partition: 1, Start: 8192, Size: 2000000, Disk: "mmcblk0", DiskMajor: 179}},
		{"259:7", BlockDev{Name: "loop0p1", Major: 259, Minor: 7, Partition: 1, Start: 2048, Size: 400000, Disk: "loop0", DiskMajor: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.want.Name, func(t *testing.T) {
			maj, mnr, _ := parseMajMin(tt.majmin)
			got, err := h.BlockDevice(maj, mnr)
			if err != nil {
				t.Fatal(err)
			}
			got.SysPath = ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if err := got.CheckGrowable(); err != nil {
				t.Errorf("CheckGrowable: %v", err)
			}
			byName, err := h.Resolve("/dev/" + tt.want.Name)
			if err != nil || byName.Name != tt.want.Name {
				t.Errorf("Resolve(/dev/%s) = %v, %v", tt.want.Name, byName.Name, err)
			}
		})
	}
	t.Run("device-mapper is unsupported", func(t *testing.T) {
		b, err := h.BlockDevice(253, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = b.CheckGrowable()
		if !errors.Is(err, ErrUnsupportedDevice) || !strings.Contains(err.Error(), `device-mapper device "vg-root"`) {
			t.Errorf("CheckGrowable = %v", err)
		}
	})
	t.Run("whole disk is not a partition", func(t *testing.T) {
		b, _ := h.BlockDevice(252, 0)
		if err := b.CheckGrowable(); !errors.Is(err, ErrUnsupportedDevice) || !strings.Contains(err.Error(), "whole disk") {
			t.Errorf("CheckGrowable = %v", err)
		}
	})
	t.Run("mount point and /dev/root", func(t *testing.T) {
		f.write("proc/self/mountinfo", "22 1 252:1 / / rw - ext4 /dev/root rw\n36 22 0:40 / /srv rw - btrfs /dev/nvme0n1p2 rw\n")
		f.write("proc/cmdline", "console=ttyS0 root=/dev/mmcblk0p1 ro\n")
		for entry, want := range map[string]string{"/": "vda1", "/srv/x": "nvme0n1p2", "/dev/root": "mmcblk0p1", "259:7": "loop0p1"} {
			var b BlockDev
			var err error
			if strings.HasPrefix(entry, "/") {
				b, err = EntryDevice(h, entry)
			} else {
				b, err = h.Resolve(entry)
			}
			if err != nil || b.Name != want {
				t.Errorf("%s resolved to %q, %v; want %s", entry, b.Name, err, want)
			}
		}
	})
}

func TestRootFromCmdline(t *testing.T) {
	tests := map[string]string{
		"ro root=/dev/vda1 quiet":         "/dev/vda1",
		"root=LABEL=cloudimg-rootfs":      "LABEL=cloudimg-rootfs",
		"root=UUID=ABCD-1234 root=/dev/x": "UUID=ABCD-1234",
		"root=PARTUUID=1234abcd-01":       "PARTUUID=1234abcd-01",
	}
	for in, want := range tests {
		if got, ok := RootFromCmdline(in); !ok || got != want {
			t.Errorf("RootFromCmdline(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	if _, ok := RootFromCmdline("quiet ro"); ok {
		t.Error("found a root= where there is none")
	}
}

func TestMatchPartition(t *testing.T) {
	path := tempImage(t)
	writeGPT(t, path, 10*mib, 512, []testPart{{2048, 4095, "boot"}, {4096, 8191, "root"}})
	dev := openImage(t, path)
	g, err := ReadGPT(dev)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.ToLower(g.Entries[1].ID.String())
	for _, tt := range []struct {
		kind, value string
		want        int
	}{{"PARTUUID", id, 2}, {"PARTLABEL", "boot", 1}, {"PARTLABEL", "nope", 0}} {
		if n, err := MatchPartition(dev, tt.kind, tt.value); err != nil || n != tt.want {
			t.Errorf("MatchPartition(%s=%s) = %d, %v; want %d", tt.kind, tt.value, n, err, tt.want)
		}
	}
	mbrPath := tempImage(t)
	writeMBR(t, mbrPath, 10*mib, []mbrPart{{0x83, 2048, 2048}, {0x83, 4096, 2048}}, nil)
	if n, err := MatchPartition(openImage(t, mbrPath), "PARTUUID", "28A8AD50-02"); err != nil || n != 2 {
		t.Errorf("MBR PARTUUID matched %d, %v; want 2", n, err)
	}
}
