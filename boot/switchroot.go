package boot

import (
	"errors"
	"fmt"
	"log/slog"
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
// caller then execs the real init. An API filesystem with no mount point
// in newRoot (a read-only root that lacks /run) is detached rather than
// failing the switch, as switch_root does: the real init mounts what it
// needs where it can.
func SwitchRoot(newRoot string, log *slog.Logger) error {
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
		if fi, err := os.Stat(dst); err != nil || !fi.IsDir() {
			if err := os.Mkdir(dst, 0o755); err != nil {
				log.Warn("switch root: no mount point for an API filesystem; detached", "dir", m, "error", err.Error())
				unix.Unmount(m, unix.MNT_DETACH)
				continue
			}
		}
		if err := unix.Mount(m, dst, "", unix.MS_MOVE, ""); err != nil {
			// An API filesystem that was never mounted is not fatal; the
			// real init mounts what it needs.
			if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				log.Warn("switch root: API filesystem not moved; detached", "dir", m, "error", err.Error())
				unix.Unmount(m, unix.MNT_DETACH)
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
