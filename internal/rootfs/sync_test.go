package rootfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/disktest"
)

// mountTmpfs mounts a tmpfs on dir (made if missing) until the test ends.
func mountTmpfs(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a filesystem inside the test's root")
	}
	must(t, os.MkdirAll(dir, 0o755))
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
}

// mountExt4 makes a small ext4 on a loop device and mounts it on dir until
// the test ends. It returns the loop device's name (loop3).
func mountExt4(t *testing.T, dir string) string {
	t.Helper()
	disktest.NeedLoop(t)
	for _, tool := range []string{"mkfs.ext4"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	img := filepath.Join(t.TempDir(), "ext4.img")
	f, err := os.Create(img)
	must(t, err)
	must(t, f.Truncate(64<<20))
	f.Close()
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	loop := disktest.AttachLoop(t, img)
	must(t, os.MkdirAll(dir, 0o755))
	if err := unix.Mount(loop, dir, "ext4", 0, ""); err != nil {
		t.Fatalf("mount %s on %s: %v", loop, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return filepath.Base(loop)
}

func devOf(t *testing.T, p string) uint64 {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Stat(p, &st))
	return st.Dev
}

// recordSyncfs replaces syncfs for the test with one that also notes the
// st_dev of each filesystem it is called on.
func recordSyncfs(t *testing.T) func() []uint64 {
	var mu sync.Mutex
	var devs []uint64
	real := syncfs
	syncfs = func(fd int) error {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		mu.Lock()
		devs = append(devs, st.Dev)
		mu.Unlock()
		return real(fd)
	}
	t.Cleanup(func() { syncfs = real })
	return func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(devs)
		devs = nil
		slices.Sort(out)
		return out
	}
}

// With /var on its own filesystem inside the target, what a module wrote
// there must be flushed before its semaphore: Sync reaches every
// filesystem written to since the last Sync, and only those (and the top).
func TestSyncReachesEveryWrittenFilesystem(t *testing.T) {
	r, dir := newRoot(t)
	mountTmpfs(t, filepath.Join(dir, "var"))
	mountTmpfs(t, filepath.Join(dir, "home"))
	must(t, os.MkdirAll(filepath.Join(dir, "var/lib/gone"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "var/old"), nil, 0o644))
	must(t, os.Symlink("/var/lib", filepath.Join(dir, "data")))
	top, varFS, home := devOf(t, dir), devOf(t, filepath.Join(dir, "var")), devOf(t, filepath.Join(dir, "home"))
	synced := recordSyncfs(t)

	tests := []struct {
		name string
		op   func() error
		want []uint64
	}{
		{"nothing written: the top only", func() error { return nil }, []uint64{top}},
		{"a file on the top", func() error { return r.WriteFile("/etc/x", []byte("x"), 0o644, KeepOwner) }, []uint64{top}},
		{"a file on /var", func() error { return r.WriteFile("/var/lib/x", []byte("x"), 0o644, KeepOwner) }, []uint64{top, varFS}},
		{"a mark file on /var, not flushed on its own", func() error {
			return r.WriteMarkFile("/var/lib/cloud/sem/m", []byte("1: 2.0\n"), 0o644, KeepOwner)
		}, []uint64{top, varFS}},
		{"through a symlink into /var", func() error { return r.WriteFile("/data/y", []byte("y"), 0o644, KeepOwner) }, []uint64{top, varFS}},
		{"an append on /var", func() error { return r.AppendFile("/var/log/z", []byte("z\n"), 0o644, KeepOwner) }, []uint64{top, varFS}},
		{"a directory on /var", func() error { return r.MkdirAll("/var/cache/a/b", 0o755, KeepOwner) }, []uint64{top, varFS}},
		{"a symlink on /var", func() error { return r.Symlink("/x", "/var/link") }, []uint64{top, varFS}},
		{"a removal on /var", func() error { return r.Remove("/var/old") }, []uint64{top, varFS}},
		{"a tree removed on /var", func() error { return r.RemoveAll("/var/lib/gone") }, []uint64{top, varFS}},
		{"the mount point's own mode", func() error { return r.Chmod("/var", 0o755) }, []uint64{top, varFS}},
		{"the mount point's owner", func() error { return r.Chown("/var", Owner{UID: 0, GID: 0}) }, []uint64{top, varFS}},
		{"files on both", func() error {
			must(t, r.WriteFile("/home/u/.profile", nil, 0o644, KeepOwner))
			return r.WriteFile("/var/lib/x", []byte("again"), 0o644, KeepOwner)
		}, []uint64{top, varFS, home}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			must(t, tt.op())
			must(t, r.Sync())
			want := slices.Sorted(slices.Values(tt.want))
			if got := synced(); !slices.Equal(got, want) {
				t.Errorf("syncfs reached %v, want %v (top %d, /var %d, /home %d)", got, want, top, varFS, home)
			}
		})
	}
}

// A filesystem written to and then unmounted before the Sync was flushed
// by its unmount; Sync must neither fail nor sync what is now under it.
func TestSyncAfterUnmount(t *testing.T) {
	r, dir := newRoot(t)
	mnt := filepath.Join(dir, "mnt")
	mountTmpfs(t, mnt)
	top := devOf(t, dir)
	synced := recordSyncfs(t)
	must(t, r.WriteFile("/mnt/x", []byte("x"), 0o644, KeepOwner))
	must(t, unix.Unmount(mnt, 0))
	must(t, r.Sync())
	if got := synced(); !slices.Equal(got, []uint64{top}) {
		t.Errorf("syncfs reached %v, want the top only (%d)", got, top)
	}
}

// writeSectors is the number of sectors written to a block device so far.
func writeSectors(t *testing.T, dev string) int64 {
	t.Helper()
	b, err := os.ReadFile("/sys/block/" + dev + "/stat")
	must(t, err)
	f := strings.Fields(string(b))
	n, err := strconv.ParseInt(f[6], 10, 64)
	must(t, err)
	return n
}

// The content of a written file reaches the disk before WriteFile
// returns, not at the next writeback: ext4 and XFS delay allocation, so
// without a flush nothing of it is written for many seconds, and a power
// cut after the rename's commit leaves an empty file.
func TestWriteFileFlushesContent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mnt")
	loop := mountExt4(t, dir)
	r, err := Open(dir)
	must(t, err)
	defer r.Close()
	must(t, r.MkdirAll("/etc", 0o755, KeepOwner))
	must(t, r.Sync())
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>8)
	}
	before := writeSectors(t, loop)
	must(t, r.WriteFile("/etc/big", data, 0o644, KeepOwner))
	if got := writeSectors(t, loop) - before; got < int64(len(data)/512) {
		t.Errorf("%d sectors reached %s during WriteFile, want the file's %d at least", got, loop, len(data)/512)
	}
}
