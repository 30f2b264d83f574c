package boot

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mountEntry is one line of /proc/self/mountinfo, as much as PID 1 needs.
type mountEntry struct {
	ID, Parent uint64
	Dev        uint64 // the device its files report (st_dev), from MAJ:MIN
	Point      string // where it is mounted, as the kernel prints it (unescaped)
	FSType     string
	Source     string
}

// readMountTable parses /proc/self/mountinfo.
func readMountTable() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	defer f.Close()
	return parseMountInfo(f)
}

// parseMountInfo reads mountinfo's format (proc(5)): "ID PARENT MAJ:MIN
// ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS".
func parseMountInfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		sep := -1
		for i, w := range f {
			if w == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if len(f) < 7 || sep < 0 || sep+2 >= len(f) {
			return nil, fmt.Errorf("mountinfo line %d: %q: not the kernel's format", line, sc.Text())
		}
		id, err1 := strconv.ParseUint(f[0], 10, 64)
		parent, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("mountinfo line %d: bad mount ids %q %q", line, f[0], f[1])
		}
		var major, minor uint32
		if _, err := fmt.Sscanf(f[2], "%d:%d", &major, &minor); err != nil {
			return nil, fmt.Errorf("mountinfo line %d: bad device %q", line, f[2])
		}
		out = append(out, mountEntry{ID: id, Parent: parent, Dev: unix.Mkdev(major, minor), Point: unescapeOctal(f[4]), FSType: f[sep+1], Source: unescapeOctal(f[sep+2])})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	return out, nil
}

// unescapeOctal undoes the \040-style escapes the kernel (mountinfo) and
// fstab use for spaces, tabs, newlines and backslashes.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountsBelow returns the mounts whose chain of parents reaches the mount
// with id top (top itself excluded), deepest first: the order to unmount
// them in.
func mountsBelow(table []mountEntry, top uint64) []mountEntry {
	children := map[uint64][]mountEntry{}
	for _, m := range table {
		if m.ID != m.Parent {
			children[m.Parent] = append(children[m.Parent], m)
		}
	}
	type item struct {
		m     mountEntry
		depth int
	}
	var found []item
	var walk func(id uint64, depth int)
	seen := map[uint64]bool{top: true}
	walk = func(id uint64, depth int) {
		for _, c := range children[id] {
			if seen[c.ID] {
				continue
			}
			seen[c.ID] = true
			found = append(found, item{c, depth})
			walk(c.ID, depth+1)
		}
	}
	walk(top, 1)
	// Deepest first; among equals, the later mount first (it may sit on
	// top of an earlier one at the same place).
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].depth != found[j].depth {
			return found[i].depth > found[j].depth
		}
		return found[i].m.ID > found[j].m.ID
	})
	out := make([]mountEntry, len(found))
	for i, f := range found {
		out[i] = f.m
	}
	return out
}

// mountSnapshot is the set of mounts that existed at one moment.
type mountSnapshot map[uint64]bool

func takeMountSnapshot() (mountSnapshot, error) {
	table, err := readMountTable()
	if err != nil {
		return nil, err
	}
	s := mountSnapshot{}
	for _, m := range table {
		s[m.ID] = true
	}
	return s, nil
}

// releaseResult is what unmountNewBelow did, the mount points relative
// to the target ("/var").
type releaseResult struct {
	taken []string // unmounted
	kept  []string // left mounted where they are: something still holds them
	errs  []error
}

// unmountAll unmounts mounts, the mounts PID 1 made below the target at
// dir, in their order (deepest first). A busy one with a device behind it
// (a filesystem the real init checks) is never detached: the processes o
// owns that hold it are ended and the unmount tried again; when it is
// still busy it stays mounted where it is, the reason in the log, for a
// detached filesystem keeps its device claimed and fsck refuses it, while
// one mounted in place is skipped by fsck -M and mount -a. A busy virtual
// filesystem (the API filesystems lent to commands, a tmpfs) is
// detached: nothing checks it.
func unmountAll(dir string, mounts []mountEntry, o ownership, log *slog.Logger) releaseResult {
	var res releaseResult
	for _, m := range mounts {
		rel := relToTarget(dir, m.Point)
		err := unix.Unmount(m.Point, 0)
		if errors.Is(err, unix.EBUSY) && isVirtualFS(m.FSType) {
			err = unix.Unmount(m.Point, unix.MNT_DETACH)
		} else if errors.Is(err, unix.EBUSY) {
			ended, left := endHolders(m.Dev, o)
			if len(ended) > 0 {
				log.Info("ended processes seedinit started that held a filesystem the real init mounts", "mount_point", rel, "processes", strings.Join(ended, ", "))
			}
			err = unix.Unmount(m.Point, 0)
			if errors.Is(err, unix.EBUSY) {
				why := "held by the kernel (a swap file, a loop device or a mount on it)"
				if len(left) > 0 {
					why = "held by " + strings.Join(left, ", ")
				}
				log.Warn("left mounted for the real init, not detached: its fsck skips a mounted filesystem but refuses a detached one", "mount_point", rel, "why", why)
				res.kept = append(res.kept, rel)
				continue
			}
		}
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			res.errs = append(res.errs, fmt.Errorf("unmount %s: %w", m.Point, err))
			continue
		}
		res.taken = append(res.taken, rel)
	}
	return res
}

// isVirtualFS reports whether fstype has no device of its own to check:
// a busy one may be detached.
func isVirtualFS(fstype string) bool {
	switch fstype {
	case "proc", "sysfs", "devtmpfs", "devpts", "tmpfs", "ramfs", "mqueue", "hugetlbfs",
		"cgroup", "cgroup2", "securityfs", "debugfs", "tracefs", "configfs", "pstore",
		"bpf", "efivarfs", "binfmt_misc", "fusectl", "autofs", "rpc_pipefs", "nsfs":
		return true
	}
	return false
}
