package boot

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// PID 1 decides what it is, what the root is and whether a path is itself
// by the identity of files and filesystems, never by comparing path
// strings: on a usrmerge root /sbin/seedinit is /usr/sbin/seedinit, an
// initramfs built by u-root makes /init a symlink, and a string compare
// that missed either made PID 1 exec itself in a loop. What "the same
// file" and "the same program" mean is internal/samefile's.

// IsInitramfs reports whether "/" is an initramfs: the kernel unpacks one
// into a ramfs (or a tmpfs), and no disk root is either.
func IsInitramfs() bool { return isRamfs("/") }

// isRamfs reports whether p is on ramfs or tmpfs: only an initramfs may
// be emptied, never a real disk.
func isRamfs(p string) bool {
	var fs unix.Statfs_t
	if err := unix.Statfs(p, &fs); err != nil {
		return false
	}
	// The magics are 32 bits; Type is as wide as the architecture's long.
	magic := uint32(fs.Type)
	return magic == unix.RAMFS_MAGIC || magic == unix.TMPFS_MAGIC
}

// mountID is the kernel's id of the mount that path is on (statx's
// STATX_MNT_ID, Linux 5.8): two paths on the same filesystem through
// different mounts (bind mounts) have different ids.
//
// A kernel older than 5.8 (4.19 and 5.4 are what appliances ship) gives
// no such id, or has no statx at all (before 4.11): the id is then read
// from /proc/self/mountinfo, the mount whose point is the longest prefix
// of the path with its symlinks resolved, the one on top where mounts are
// stacked on the same point.
func mountID(path string) (uint64, error) {
	id, err := statxMountID(path)
	if err == nil {
		return id, nil
	}
	if errors.Is(err, errNoStatxMountID) || errors.Is(err, unix.ENOSYS) {
		return mountIDFromTable(path)
	}
	return 0, err
}

// mountIDFromTable is mountID read from /proc/self/mountinfo.
func mountIDFromTable(path string) (uint64, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return 0, err
	}
	table, err := readMountTable()
	if err != nil {
		return 0, err
	}
	var best *mountEntry
	for i := range table {
		m := &table[i]
		if !pathUnder(real, m.Point) {
			continue
		}
		switch {
		case best == nil || len(m.Point) > len(best.Point):
			best = m
		case m.Point == best.Point && m.Parent == best.ID:
			best = m // mounted on top of best, at the same point
		}
	}
	if best == nil {
		return 0, fmt.Errorf("find the mount of %s in the mount table: none", path)
	}
	// A later entry may sit on top of the one found.
	for changed := true; changed; {
		changed = false
		for i := range table {
			if m := &table[i]; m.Point == best.Point && m.Parent == best.ID && m.ID != best.ID {
				best, changed = m, true
			}
		}
	}
	return best.ID, nil
}

// pathUnder reports whether p is dir or below it.
func pathUnder(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// statxMountID asks statx for the mount id; tests replace it to be a
// kernel older than 5.8.
var statxMountID = func(path string) (uint64, error) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_MNT_ID, &stx); err != nil {
		return 0, err
	}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		return 0, errNoStatxMountID
	}
	return stx.Mnt_id, nil
}

var errNoStatxMountID = errors.New("the kernel gives no mount id (older than 5.8)")

// isMountPoint reports whether dir is the top of a mount: its mount is
// not its parent's. A bind mount of the same filesystem counts, which a
// compare of device numbers would miss.
func isMountPoint(dir string) bool {
	var sa, sb unix.Stat_t
	if unix.Stat(dir, &sa) != nil || unix.Stat(dir+"/..", &sb) != nil {
		return false
	}
	if sa.Dev == sb.Dev && sa.Ino == sb.Ino {
		return true // "/" is its own parent, and a mount
	}
	a, errA := mountID(dir)
	b, errB := mountID(dir + "/..")
	if errA == nil && errB == nil {
		return a != b
	}
	// Kernels before 5.8: a different device is still a mount point.
	return sa.Dev != sb.Dev
}
