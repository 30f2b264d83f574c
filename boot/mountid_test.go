package boot

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/testenv"
)

// olderKernel makes statx give no mount id, as kernels before 5.8 (the
// 4.19 and 5.4 appliances ship) do, or have no statx at all (before
// 4.11), for the rest of the test.
func olderKernel(t *testing.T, err error) {
	old := statxMountID
	statxMountID = func(string) (uint64, error) { return 0, err }
	t.Cleanup(func() { statxMountID = old })
}

// Without STATX_MNT_ID, the fstab filesystems PID 1 mounted were never
// released: the mount of the target could not be identified. The mount
// ids must come from /proc/self/mountinfo then, the same as statx's.
func TestMountIDWithoutStatx(t *testing.T) {
	testenv.NeedRoot(t, "mounting a tmpfs and a bind mount on it")
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	if err := os.Mkdir(m, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", m, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(m, unix.MNT_DETACH) })
	if err := os.MkdirAll(filepath.Join(m, "sub/deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(m, "sub/file"), nil, 0o644)
	// A second mount on the same point (a bind of the tmpfs's sub on m
	// itself): the one on top is the one paths reach.
	stacked := filepath.Join(dir, "stacked")
	os.Mkdir(stacked, 0o755)
	if err := unix.Mount("tmpfs", stacked, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(stacked, unix.MNT_DETACH) })
	if err := unix.Mount(filepath.Join(m, "sub"), stacked, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(stacked, unix.MNT_DETACH) })
	os.Symlink(filepath.Join(m, "sub"), filepath.Join(dir, "link"))

	paths := []string{"/", "/proc", "/proc/self/fd", dir, m, filepath.Join(m, "sub"), filepath.Join(m, "sub/file"),
		filepath.Join(m, "sub/deeper/.."), stacked, filepath.Join(stacked, "deeper"), filepath.Join(dir, "link"), filepath.Join(dir, "link/deeper")}
	want := map[string]uint64{}
	for _, p := range paths {
		id, err := mountID(p)
		if err != nil {
			t.Skipf("this kernel gives no mount id to compare with: %v", err)
		}
		want[p] = id
	}
	for _, why := range []error{errNoStatxMountID, unix.ENOSYS} {
		olderKernel(t, why)
		for _, p := range paths {
			got, err := mountID(p)
			if err != nil || got != want[p] {
				t.Errorf("without statx (%v): mountID(%s) = %d, %v; statx says %d", why, p, got, err, want[p])
			}
		}
		if !isMountPoint(m) || !isMountPoint(stacked) || isMountPoint(filepath.Join(m, "sub")) {
			t.Errorf("without statx (%v): isMountPoint wrong for %s, %s or its sub", why, m, stacked)
		}
		// A bind mount of the same filesystem is a mount point too, which
		// device numbers cannot tell.
		bind := filepath.Join(m, "sub/deeper")
		if err := unix.Mount(filepath.Join(m, "sub"), bind, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		if !isMountPoint(bind) {
			t.Errorf("without statx (%v): a bind mount of the same filesystem is not a mount point", why)
		}
		unix.Unmount(bind, unix.MNT_DETACH)
	}
}
