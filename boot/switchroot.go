package boot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// movedMounts are carried from the initramfs into the new root.
var movedMounts = []string{"/dev", "/proc", "/sys", "/run"}

// SwitchRoot makes newRoot the root filesystem, as switch_root(8) does:
// the API mounts move over, the initramfs's files are deleted without
// crossing into other filesystems (they would otherwise pin RAM for the
// life of the machine), newRoot is moved onto "/" and chrooted into. The
// caller then execs the real init.
func SwitchRoot(newRoot string) error {
	var st, rootSt unix.Stat_t
	if err := unix.Stat(newRoot, &st); err != nil {
		return fmt.Errorf("switch root to %s: %w", newRoot, err)
	}
	if err := unix.Stat("/", &rootSt); err != nil {
		return fmt.Errorf("switch root to %s: %w", newRoot, err)
	}
	if st.Dev == rootSt.Dev {
		return fmt.Errorf("switch root to %s: it is not a mount point of its own", newRoot)
	}
	for _, m := range movedMounts {
		dst := filepath.Join(newRoot, m)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("switch root: %w", err)
		}
		if err := unix.Mount(m, dst, "", unix.MS_MOVE, ""); err != nil {
			// An API filesystem that was never mounted is not fatal; the
			// real init mounts what it needs.
			if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("switch root: move %s: %w", m, err)
			}
		}
	}
	if err := unix.Chdir(newRoot); err != nil {
		return fmt.Errorf("switch root: %w", err)
	}
	if isRamfs("/") {
		deleteTree("/", rootSt.Dev)
	}
	if err := unix.Mount(newRoot, "/", "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("switch root: move %s to /: %w", newRoot, err)
	}
	if err := unix.Chroot("."); err != nil {
		return fmt.Errorf("switch root: chroot: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("switch root: %w", err)
	}
	return nil
}

// isRamfs reports whether p is on ramfs or tmpfs: only an initramfs may
// be emptied, never a real disk.
func isRamfs(p string) bool {
	var fs unix.Statfs_t
	if err := unix.Statfs(p, &fs); err != nil {
		return false
	}
	return fs.Type == unix.RAMFS_MAGIC || fs.Type == unix.TMPFS_MAGIC
}

// deleteTree removes everything under dir that is on device dev, never
// descending into another filesystem. Errors are ignored: a file that
// cannot go only costs memory.
func deleteTree(dir string, dev uint64) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Dev != dev {
			continue
		}
		if e.IsDir() {
			deleteTree(p, dev)
			unix.Rmdir(p)
			continue
		}
		unix.Unlink(p)
	}
}
