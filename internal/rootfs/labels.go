package rootfs

import (
	"errors"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A file replaced by rename is a new inode: the security labels of the
// file it replaces (SELinux's security.selinux, Smack's security.SMACK64)
// are gone unless they are carried over. On an enforcing SELinux system
// an authorized_keys or sshd_config that lost its label is one sshd may
// not read, so WriteFile and Symlink copy the replaced node's security.*
// attributes onto the temporary one before the rename.

// dropsOnWrite are the security attributes that describe the old content
// or grant privileges, which the kernel itself removes when a file is
// written or changes owner: file capabilities (they would hand the old
// binary's privileges to whatever the new content is), IMA's hash or
// signature of the old content (appraisal would then refuse the file) and
// EVM's HMAC over the old metadata (which would no longer verify). They
// are never copied.
var dropsOnWrite = map[string]bool{
	"security.capability": true,
	"security.ima":        true,
	"security.evm":        true,
}

// carryLabels copies the security labels of dir/old (not followed) with
// set, which puts one attribute on the new node; dir is an open handle on
// the directory both live in. It reports whether the new node now has
// what the old one had: false when nothing was at old, or when the labels
// could not be read or set (no /proc, an unprivileged run, an LSM that
// refuses). That is never an error of the write: a file with the label
// the kernel gave it is better than no file, and the run's relabel
// (stages) takes care of every node for which this returned false.
func carryLabels(dir *os.File, old string, set func(name string, value []byte) error) bool {
	// There is no getxattrat(2) before Linux 6.13: the node is named
	// through the directory's handle, which keeps the lookup inside the
	// target, and /proc/self/fd; the L calls do not follow old itself.
	p := "/proc/self/fd/" + strconv.Itoa(int(dir.Fd())) + "/" + old
	names, err := listXattrs(p)
	if errors.Is(err, unix.ENOTSUP) {
		return true // the filesystem keeps no attributes: none to carry
	}
	if err != nil {
		return false
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "security.") || dropsOnWrite[name] {
			continue
		}
		value, err := getXattr(p, name)
		if errors.Is(err, unix.ENODATA) {
			continue // removed since the listing
		}
		if err != nil || set(name, value) != nil {
			return false
		}
	}
	return true
}

func listXattrs(p string) ([]string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Llistxattr(p, buf)
		if errors.Is(err, unix.ERANGE) {
			size, err := unix.Llistxattr(p, nil)
			if err != nil {
				return nil, err
			}
			buf = make([]byte, size+64)
			continue
		}
		if err != nil {
			return nil, err
		}
		var names []string
		for _, name := range strings.Split(string(buf[:n]), "\x00") {
			if name != "" {
				names = append(names, name)
			}
		}
		return names, nil
	}
}

func getXattr(p, name string) ([]byte, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Lgetxattr(p, name, buf)
		if errors.Is(err, unix.ERANGE) {
			size, err := unix.Lgetxattr(p, name, nil)
			if err != nil {
				return nil, err
			}
			buf = make([]byte, size+64)
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

// labelFile carries the labels of base in dir, if something is there,
// onto the open temporary file f that is about to replace it.
func labelFile(dir *os.Root, base string, f *os.File) bool {
	d, err := dir.Open(".")
	if err != nil {
		return false
	}
	defer d.Close()
	fd := int(f.Fd())
	return carryLabels(d, base, func(name string, value []byte) error {
		return unix.Fsetxattr(fd, name, value, 0)
	})
}

// labelLink carries the labels of rel onto the temporary symlink tmp, in
// the same directory, that is about to replace it.
func (r *Root) labelLink(rel, tmp string) bool {
	dir, err := r.root.Open(path.Dir(rel))
	if err != nil {
		return false
	}
	defer dir.Close()
	to := "/proc/self/fd/" + strconv.Itoa(int(dir.Fd())) + "/" + path.Base(tmp)
	return carryLabels(dir, path.Base(rel), func(name string, value []byte) error {
		return unix.Lsetxattr(to, name, value, 0)
	})
}

// Touched is a path that changes since some point wrote, made, linked or
// changed the mode or owner of, as it is now in the target.
type Touched struct {
	// Path is absolute in the target, symlinks in its directories
	// resolved (a symlink that was made is itself the path).
	Path string
	// Fresh is true when no security label was carried over from a node
	// it replaced: a new file, directory or link, or one whose labels
	// could not be copied. Without a relabel it has the label the kernel
	// gave it, or none at all before a policy is loaded.
	Fresh bool
}

// Touched lists what the changes since the n-th one left in the target,
// each path once in the order first touched; what was removed since, or
// is gone, is left out.
func (r *Root) Touched(n int) []Touched {
	r.mu.Lock()
	var metas []changeMeta
	if n < len(r.metas) {
		metas = append(metas, r.metas[n:]...)
	}
	r.mu.Unlock()
	index := map[string]int{}
	var out []Touched
	for _, m := range metas {
		if m.rel == "" {
			continue
		}
		p := "/" + m.rel
		if m.rel == "." {
			p = "/"
		}
		if i, ok := index[p]; ok {
			out[i].Fresh = out[i].Fresh || m.fresh
			continue
		}
		index[p] = len(out)
		out = append(out, Touched{Path: p, Fresh: m.fresh})
	}
	rels := make([]string, len(out))
	for i, t := range out {
		rels[i] = strings.TrimPrefix(t.Path, "/")
		if rels[i] == "" {
			rels[i] = "."
		}
	}
	exists := r.lexistAll(rels)
	kept := out[:0]
	for i, t := range out {
		if exists[i] {
			kept = append(kept, t)
		}
	}
	return kept
}

// lexistAll reports for each resolved, target-relative path whether
// something (a symlink itself included) is there. The paths are visited in
// sorted order with a stack of directory handles, so the directories that
// many paths share (all of them, for the levels MkdirAll made of a deep
// path) are opened once: the cost is linear in the number of distinct
// directories, where a lookup per path from the top is quadratic in the
// depth. Each level is opened with O_NOFOLLOW below a handle already
// held, so, like os.Root, nothing outside the target is looked at.
func (r *Root) lexistAll(rels []string) []bool {
	order := make([]int, len(rels))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return rels[order[a]] < rels[order[b]] })
	exists := make([]bool, len(rels))
	// stack holds the directories of the previous path that are open:
	// each is the prefix of prev up to end, with its handle (-1 when it
	// cannot be opened, so nothing below it exists). Working on offsets
	// into the paths keeps the walk free of per-path allocations.
	type level struct{ end, fd int }
	stack := []level{{end: 0, fd: r.top}}
	defer func() {
		for _, l := range stack[1:] {
			if l.fd >= 0 {
				unix.Close(l.fd)
			}
		}
	}()
	prev := ""
	for _, i := range order {
		p := rels[i]
		if p == "." {
			exists[i] = true
			continue
		}
		common := 0
		for common < len(p) && common < len(prev) && p[common] == prev[common] {
			common++
		}
		// A directory of prev is one of p when p has the same bytes up
		// to its end, followed by a slash.
		for top := stack[len(stack)-1]; len(stack) > 1 && (top.end > common || top.end >= len(p) || p[top.end] != '/'); top = stack[len(stack)-1] {
			if top.fd >= 0 {
				unix.Close(top.fd)
			}
			stack = stack[:len(stack)-1]
		}
		for {
			top := stack[len(stack)-1]
			from := top.end
			if from > 0 {
				from++ // past the slash
			}
			slash := strings.IndexByte(p[from:], '/')
			if slash < 0 {
				if top.fd >= 0 {
					var st unix.Stat_t
					exists[i] = unix.Fstatat(top.fd, p[from:], &st, unix.AT_SYMLINK_NOFOLLOW) == nil
				}
				break
			}
			fd := -1
			if top.fd >= 0 {
				if h, err := openDirNoFollow(top.fd, p[from:from+slash]); err == nil {
					fd = h
				}
			}
			stack = append(stack, level{end: from + slash, fd: fd})
		}
		prev = p
	}
	return exists
}
