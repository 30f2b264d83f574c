// Package rootfs is the one door through which seedinit changes a root
// filesystem: the running system's "/", an initramfs's /sysroot, or a test's
// temporary directory.
//
// Paths are resolved as if the target were "/": symlinks inside it are
// followed, absolute ones from the target's top, and ".." stops at the top, so
// no path handed to a Root ever reaches outside it. On top of that resolution
// every operation goes through os.Root, which refuses an escape even if the
// tree changes under us between the two steps. Writes are atomic: a temporary
// file in the same directory gets its content, owner, mode and the security
// labels of the file it replaces, is flushed to disk and is renamed over the
// old one, so a reader sees the old file or the new, never a mix, even after
// a power cut; Sync makes a batch of renames durable.
package rootfs

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/earlyrand"
)

// maxSymlinks matches the kernel's MAXSYMLINKS: deeper chains are loops.
const maxSymlinks = 40

// ModeSpecial is setuid, setgid and sticky as fs.FileMode keeps them: not
// as chmod(2)'s 0o7000 bits, which a plain fs.FileMode(n) would turn into
// nonsense or drop.
const ModeSpecial = fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// ModeBits is the part of m that chmod(2) sets: permissions plus setuid,
// setgid and sticky, without the file type.
func ModeBits(m fs.FileMode) fs.FileMode { return m & (fs.ModePerm | ModeSpecial) }

// UnixMode turns chmod(2) bits (0o4755) into an fs.FileMode, the setuid,
// setgid and sticky bits included; bits above 0o7777 are dropped.
func UnixMode(n uint32) fs.FileMode {
	m := fs.FileMode(n & 0o777)
	if n&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if n&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if n&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// Owner is a numeric owner for a file; -1 in a field keeps what is there
// (for a new file: the writer's own id).
type Owner struct{ UID, GID int }

// KeepOwner leaves ownership alone.
var KeepOwner = Owner{UID: -1, GID: -1}

// Root is an open target root.
type Root struct {
	dir  string
	root *os.Root
	// top is an O_PATH handle on the target's top directory, opened with
	// root: the walks that keep directory handles (resolve, MkdirAll,
	// Touched) start from the directory root was opened on, not from
	// whatever dir names by the time they run.
	top int

	mu      sync.Mutex
	changes []Change
	metas   []changeMeta // one per change
	// dirty maps each filesystem written to since the last Sync (st_dev)
	// to a target-relative path on it. Paths, not open handles: a handle
	// would keep a filesystem busy that a module wants to unmount.
	dirty map[uint64]string
	// steps counts the changes made, and stopAt (-1: never) is where a
	// crash test cuts the power (see StopAfter).
	steps, stopAt int
	// swept holds the directories (device, inode) swept of an earlier
	// boot's temporary files.
	swept map[[2]uint64]bool
	// boot is this boot's tag (bootTag) when the Root was opened.
	boot string
}

// Change is one modification seedinit made in the target, kept so that a
// run can report what each module changed.
type Change struct {
	Op   string // "write", "mkdir", "symlink", "remove", "chmod", "chown"
	Path string // as the caller named it
}

// changeMeta is what a relabel needs to know about a change.
type changeMeta struct {
	rel   string // resolved, target-relative; "" for a removal
	fresh bool   // no security label carried over (see Touched)
}

func (r *Root) record(op, name, rel string, fresh bool) {
	r.mu.Lock()
	r.changes = append(r.changes, Change{Op: op, Path: name})
	r.metas = append(r.metas, changeMeta{rel: rel, fresh: fresh})
	r.mu.Unlock()
}

// dirtied notes that the filesystem fi lives on was written to, with rel
// (a directory on it) as where Sync finds it again.
func (r *Root) dirtied(fi fs.FileInfo, rel string) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		r.dirtiedDev(uint64(st.Dev), rel)
	}
}

func (r *Root) dirtiedDev(dev uint64, rel string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.dirty[dev]; seen {
		return
	}
	if r.dirty == nil {
		r.dirty = map[uint64]string{}
	}
	r.dirty[dev] = rel
}

// dirtiedAt is dirtied for a path: the node itself when it is a
// directory (it may be a mount point), else its directory.
func (r *Root) dirtiedAt(rel string) {
	fi, err := r.root.Lstat(rel)
	if err != nil || !fi.IsDir() {
		rel = path.Dir(rel)
		if fi, err = r.root.Stat(rel); err != nil {
			return
		}
	}
	r.dirtied(fi, rel)
}

// Changes returns the changes made since the n-th one (0: all).
func (r *Root) Changes(n int) []Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n >= len(r.changes) {
		return nil
	}
	return append([]Change(nil), r.changes[n:]...)
}

// ChangeCount is the number of changes made so far.
func (r *Root) ChangeCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.changes)
}

// Open opens dir as a target root. dir must exist.
func Open(dir string) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open target root %s: %w", dir, err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("open target root %s: %w", dir, err)
	}
	top, err := topHandle(r)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("open target root %s: %w", dir, err)
	}
	return &Root{dir: abs, root: r, top: top, stopAt: -1, boot: bootTag()}, nil
}

// topHandle duplicates the handle r holds on its directory, so that both
// name the same directory whatever happens to its path.
func topHandle(r *os.Root) (int, error) {
	f, err := r.Open(".")
	if err != nil {
		return -1, err
	}
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("duplicate the handle of %s: %w", r.Name(), err)
	}
	return fd, nil
}

// Close releases the root's directory handles.
func (r *Root) Close() error {
	unix.Close(r.top)
	return r.root.Close()
}

// Dir is the host path of the target's top directory.
func (r *Root) Dir() string { return r.dir }

// IsHostRoot reports whether the target is the running system's own "/":
// the same directory by identity (device and inode), whatever the path it
// was opened by ("/", "/.", a bind mount of "/").
func (r *Root) IsHostRoot() bool {
	var top, host unix.Stat_t
	if err := unix.Stat(r.dir, &top); err != nil {
		return false
	}
	if err := unix.Stat("/", &host); err != nil {
		return false
	}
	return top.Dev == host.Dev && top.Ino == host.Ino
}

// Resolve returns the target-relative path (no leading slash, "." for the
// top) that name refers to, with every symlink resolved inside the target.
// Components that do not exist yet are kept as they are.
func (r *Root) Resolve(name string) (string, error) { return r.resolve(name, true) }

// HostPath is the path on the host of name inside the target, symlinks
// resolved. Use it only to hand a path to something outside seedinit (a
// chrooted command's working file); seedinit's own I/O goes through Root.
func (r *Root) HostPath(name string) (string, error) {
	rel, err := r.Resolve(name)
	if err != nil {
		return "", err
	}
	return filepath.Join(r.dir, rel), nil
}

func (r *Root) resolve(name string, followLast bool) (string, error) {
	if err := checkPathLimits(name); err != nil {
		return "", fmt.Errorf("resolve %s in %s: %w", abbrev(name), r.dir, err)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("resolve %q in %s: a path cannot hold a NUL byte: %w", abbrev(name), r.dir, unix.EINVAL)
	}
	// The walk holds a directory handle per resolved component, so each
	// step costs one fstatat (and an openat for a directory) instead of
	// an os.Root lookup that walks the whole prefix again: a module
	// resolves hundreds of paths. Handles of components that do not exist
	// are -1, and nothing below them is looked up.
	w := walk{fds: []int{r.top}}
	defer w.closeAll()
	pending := splitPath(name)
	links := 0
	for len(pending) > 0 {
		part := pending[0]
		pending = pending[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			w.pop()
			continue
		}
		// Symlinks can make a short name resolve to a long path: the
		// result is held to what a name may be, which also bounds the
		// handles the walk keeps open.
		if len(part) > maxComponent || w.size+1+len(part) > maxPath {
			return "", fmt.Errorf("resolve %s in %s: %w", abbrev(name), r.dir, &limitError{n: w.size + 1 + len(part), part: part, resolved: true})
		}
		dir := w.dir()
		if (len(pending) == 0 && !followLast) || dir < 0 {
			w.push(part, -1)
			continue
		}
		var st unix.Stat_t
		err := unix.Fstatat(dir, part, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
			w.push(part, -1)
			continue
		case err != nil:
			return "", fmt.Errorf("resolve %s in %s: %w", abbrev(name), r.dir, &fs.PathError{Op: "lstat", Path: w.path(part), Err: err})
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if len(pending) == 0 {
				w.push(part, -1)
				continue
			}
			fd, err := unix.Openat(dir, part, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return "", fmt.Errorf("resolve %s in %s: %w", abbrev(name), r.dir, &fs.PathError{Op: "open", Path: w.path(part), Err: err})
			}
			w.push(part, fd)
		case unix.S_IFLNK:
			links++
			if links > maxSymlinks {
				return "", fmt.Errorf("resolve %s in %s: too many levels of symbolic links", abbrev(name), r.dir)
			}
			dest, err := readlinkat(dir, part)
			if err != nil {
				return "", fmt.Errorf("resolve %s in %s: %w", abbrev(name), r.dir, &fs.PathError{Op: "readlink", Path: w.path(part), Err: err})
			}
			if strings.HasPrefix(dest, "/") {
				w.toTop()
			}
			pending = append(splitPath(dest), pending...)
		default:
			w.push(part, -1)
		}
	}
	if len(w.names) == 0 {
		return ".", nil
	}
	return strings.Join(w.names, "/"), nil
}

// Linux's limits on names: PATH_MAX (4096) counts the terminating NUL, so
// a path has at most 4095 bytes, and NAME_MAX (255) bytes per component.
// Deeper or longer names than the kernel takes are refused up front with
// an error that says so, rather than walked: a hostile name thousands of
// levels deep costs a handle and a lookup per level.
const (
	maxPath      = unix.PathMax - 1
	maxComponent = 255
)

// ErrNameTooLong is wrapped by the errors of names over Linux's limits.
var ErrNameTooLong = unix.ENAMETOOLONG

// limitError is a name over maxPath or with a component over maxComponent.
type limitError struct {
	n        int    // the path's length in bytes
	part     string // the component, when it is the one too long
	resolved bool   // the limit was passed while following symlinks
}

func (e *limitError) Error() string {
	if len(e.part) > maxComponent {
		return fmt.Sprintf("a component is %d bytes long (%s): Linux allows at most %d (NAME_MAX)", len(e.part), abbrev(e.part), maxComponent)
	}
	if e.resolved {
		return fmt.Sprintf("following its symlinks gives a path of %d bytes or more: Linux allows at most %d (PATH_MAX)", e.n, maxPath)
	}
	return fmt.Sprintf("the path is %d bytes long: Linux allows at most %d (PATH_MAX)", e.n, maxPath)
}

func (e *limitError) Unwrap() error { return ErrNameTooLong }

// checkPathLimits holds a name to maxPath and maxComponent.
func checkPathLimits(name string) error {
	if len(name) > maxPath {
		return &limitError{n: len(name)}
	}
	for rest := name; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, "/")
		if len(part) > maxComponent {
			return &limitError{part: part}
		}
	}
	return nil
}

// abbrev shortens a name for a message: a hostile one can be 4 KB.
func abbrev(name string) string {
	const keep = 80
	if len(name) <= keep {
		return name
	}
	return fmt.Sprintf("%s...(%d bytes)", name[:keep], len(name))
}

// walk is the state of resolve: the components resolved so far and, for
// each, a directory handle (fds[0] is the target's top, which belongs to
// the Root; fds[i+1] belongs to names[i]).
type walk struct {
	names []string
	fds   []int
	size  int // len(strings.Join(names, "/"))
}

func (w *walk) dir() int { return w.fds[len(w.fds)-1] }

func (w *walk) push(name string, fd int) {
	if len(w.names) > 0 {
		w.size++
	}
	w.size += len(name)
	w.names = append(w.names, name)
	w.fds = append(w.fds, fd)
}

// pop goes up one level; ".." at the top stays at the top.
func (w *walk) pop() {
	if len(w.names) == 0 {
		return
	}
	if fd := w.dir(); fd >= 0 {
		unix.Close(fd)
	}
	w.size -= len(w.names[len(w.names)-1])
	w.names = w.names[:len(w.names)-1]
	if len(w.names) > 0 {
		w.size--
	}
	w.fds = w.fds[:len(w.fds)-1]
}

func (w *walk) toTop() {
	for len(w.names) > 0 {
		w.pop()
	}
}

func (w *walk) closeAll() {
	for _, fd := range w.fds[1:] {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

func (w *walk) path(last string) string {
	return path.Join(path.Join(w.names...), last)
}

// readlinkat reads a symlink's target, growing the buffer up to PATH_MAX.
func readlinkat(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if n < size || size >= unix.PathMax {
			return string(buf[:n]), nil
		}
	}
}

func splitPath(p string) []string {
	return strings.Split(strings.Trim(p, "/"), "/")
}

// ReadFile reads name inside the target.
func (r *Root) ReadFile(name string) ([]byte, error) {
	rel, err := r.Resolve(name)
	if err != nil {
		return nil, err
	}
	b, err := r.root.ReadFile(rel)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, unwrapPath(err))
	}
	return b, nil
}

// Open opens name for reading.
func (r *Root) Open(name string) (*os.File, error) {
	rel, err := r.Resolve(name)
	if err != nil {
		return nil, err
	}
	f, err := r.root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, unwrapPath(err))
	}
	return f, nil
}

// Stat follows symlinks; Lstat describes a final symlink itself.
func (r *Root) Stat(name string) (fs.FileInfo, error) {
	rel, err := r.Resolve(name)
	if err != nil {
		return nil, err
	}
	return r.root.Stat(rel)
}

// Lstat is Stat without following a symlink in the last component.
func (r *Root) Lstat(name string) (fs.FileInfo, error) {
	rel, err := r.resolve(name, false)
	if err != nil {
		return nil, err
	}
	return r.root.Lstat(rel)
}

// Exists reports whether name exists (following symlinks).
func (r *Root) Exists(name string) bool {
	_, err := r.Stat(name)
	return err == nil
}

// ReadDir lists a directory, sorted by name.
func (r *Root) ReadDir(name string) ([]fs.DirEntry, error) {
	rel, err := r.Resolve(name)
	if err != nil {
		return nil, err
	}
	return fs.ReadDir(r.root.FS(), rel)
}

// Readlink returns a symlink's destination as stored.
func (r *Root) Readlink(name string) (string, error) {
	rel, err := r.resolve(name, false)
	if err != nil {
		return "", err
	}
	return r.root.Readlink(rel)
}

// MkdirAll creates name and any missing parents. Directories it creates get
// mode and owner; existing ones are left as they are.
func (r *Root) MkdirAll(name string, mode fs.FileMode, owner Owner) error {
	rel, err := r.Resolve(name)
	if err != nil {
		return err
	}
	fd, err := r.mkdirAll(name, rel, mode, owner)
	if err != nil {
		return err
	}
	if fd != r.top {
		unix.Close(fd)
	}
	return nil
}

// WriteFile replaces name with data atomically, with owner, mode and the
// replaced file's security labels set and the content on disk before the
// file appears under its name. Missing parent directories are created
// 0755, owned by root. A symlink at name is followed: the file it points
// to (inside the target) is replaced, as a plain write would.
func (r *Root) WriteFile(name string, data []byte, mode fs.FileMode, owner Owner) error {
	return r.writeData(name, data, mode, owner, writeOpts{})
}

// WriteMarkFile is WriteFile for a file whose loss in a power cut only
// means work done or a report written again, such as a module's
// semaphore (only its existence is read) or status.json (written anew by
// every run): written and renamed atomically like any other, but not
// flushed on its own (an fsync apiece was a quarter of a first boot's
// flushes); the next Sync makes it durable with everything else. Empty
// after a power cut where a filesystem does not order data before a
// rename (XFS), a semaphore still marks what it marks.
func (r *Root) WriteMarkFile(name string, data []byte, mode fs.FileMode, owner Owner) error {
	return r.writeData(name, data, mode, owner, writeOpts{noFlush: true})
}

// writeData is writeFile for content held in memory.
func (r *Root) writeData(name string, data []byte, mode fs.FileMode, owner Owner, opts writeOpts) error {
	_, err := r.writeFile(name, mode, owner, opts, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
	return err
}

// WriteFileWith is WriteFile for content that is made in place rather than
// held in memory (a preallocated swap file): fill writes the new file
// through f, which is open write-only on the temporary file that is then
// given its mode and owner and renamed over name. Temporary files of name
// that an interrupted run left behind are removed first: such files can
// be gigabytes.
func (r *Root) WriteFileWith(name string, mode fs.FileMode, owner Owner, fill func(f *os.File) error) error {
	_, err := r.writeFile(name, mode, owner, writeOpts{removeStale: true}, fill)
	return err
}

// writeOpts are the variants of writeFile.
type writeOpts struct {
	// removeStale removes temporary files an interrupted run left.
	removeStale bool
	// keepIfSame leaves the file alone when what fill wrote, the mode
	// and the owner are what is there already.
	keepIfSame bool
	// noFlush leaves the content to the next Sync (WriteMarkFile).
	noFlush bool
}

// writeFile is WriteFile's engine: fill writes the new content into the
// temporary file. It reports whether it replaced the file (always, unless
// opts.keepIfSame found the same file there).
func (r *Root) writeFile(name string, mode fs.FileMode, owner Owner, opts writeOpts, fill func(f *os.File) error) (bool, error) {
	rel, err := r.Resolve(name)
	if err != nil {
		return false, err
	}
	if rel == "." {
		return false, fmt.Errorf("write %s: is the target's top directory", name)
	}
	if err := r.MkdirAll(path.Dir(rel), 0o755, Owner{UID: 0, GID: 0}.orKeep(r)); err != nil {
		return false, fmt.Errorf("write %s: %w", name, err)
	}
	// The directory is held for the rest: the temporary file, the old
	// file's comparison and labels and the rename are each one lookup of
	// one name in it, not a walk of the whole path (a module writes
	// hundreds of files, most of them deep under /var/lib/cloud).
	dir, err := r.root.OpenRoot(path.Dir(rel))
	if err != nil {
		return false, fmt.Errorf("write %s: %w", name, unwrapPath(err))
	}
	defer dir.Close()
	base := path.Base(rel)
	if opts.removeStale {
		r.removeStaleTemps(dir, base)
	}
	r.sweep(dir, path.Dir(rel))
	if err := r.step(); err != nil {
		return false, fmt.Errorf("write %s: %w", name, err)
	}
	tmp, f, err := r.createTemp(dir, base, mode)
	if err != nil {
		return false, fmt.Errorf("write %s: %w", name, err)
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			if r.step() == nil {
				dir.Remove(tmp)
			}
		}
	}()
	if err := fill(f); err != nil {
		return false, fmt.Errorf("write %s: %w", name, unwrapPath(err))
	}
	if opts.keepIfSame && sameFile(dir, base, f, mode, owner) {
		return false, nil
	}
	// Owner before mode: the kernel clears setuid and setgid on chown,
	// so a 04755 chmod'ed first would end as 0755.
	if owner.UID >= 0 || owner.GID >= 0 {
		if err := f.Chown(owner.UID, owner.GID); err != nil {
			return false, fmt.Errorf("write %s: set owner %d:%d: %w", name, owner.UID, owner.GID, unwrapPath(err))
		}
	}
	if err := f.Chmod(mode); err != nil {
		return false, fmt.Errorf("write %s: set mode: %w", name, unwrapPath(err))
	}
	labelled := labelFile(dir, base, f)
	// The content must be on disk before the rename can be: XFS (unlike
	// ext4's auto_da_alloc) does not flush a file renamed over another,
	// and a power cut between a committed rename and the data's
	// writeback leaves an empty file where a good one was. fsync rather
	// than fdatasync: for a new file both must commit its size and
	// blocks, which is the whole cost, and fsync also makes the mode,
	// owner and labels durable on filesystems that do not order metadata
	// behind a later rename. New files are flushed too: a module that
	// makes a file only when it is missing (a host key) would take an
	// empty one for done. The rename itself is made durable by Sync.
	if !opts.noFlush {
		if err := f.Sync(); err != nil {
			return false, fmt.Errorf("write %s: flush to disk: %w", name, unwrapPath(err))
		}
	}
	if fi, err := f.Stat(); err == nil {
		r.dirtied(fi, path.Dir(rel))
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("write %s: %w", name, unwrapPath(err))
	}
	if err := r.step(); err != nil {
		return false, fmt.Errorf("write %s: %w", name, err)
	}
	if err := dir.Rename(tmp, base); err != nil {
		return false, fmt.Errorf("write %s: %w", name, unwrapPath(err))
	}
	committed = true
	r.record("write", name, rel, !labelled)
	return true, nil
}

// WriteFileIfChanged writes only when the content, mode or owner differ, so
// that a re-run leaves mtimes alone. It reports whether it wrote. The mode
// compared includes setuid, setgid and sticky: a file that lost its
// setuid bit is written again. The old file is compared where it lies,
// a block at a time: it is never read whole, whatever its size.
func (r *Root) WriteFileIfChanged(name string, data []byte, mode fs.FileMode, owner Owner) (bool, error) {
	r.sweepDirOf(name)
	if r.holds(name, data, mode, owner) {
		return false, nil
	}
	return true, r.WriteFile(name, data, mode, owner)
}

// WriteFileFromIfChanged is WriteFileIfChanged for content read from src,
// which is streamed into the temporary file and compared there with the
// old file, so that neither is held in memory; when they are the same,
// mode and owner included, the old file stays and the temporary one goes.
// An error from src fails the write and leaves the old file.
func (r *Root) WriteFileFromIfChanged(name string, src io.Reader, mode fs.FileMode, owner Owner) (bool, error) {
	return r.writeFile(name, mode, owner, writeOpts{keepIfSame: true}, func(f *os.File) error {
		return copyFrom(f, src)
	})
}

// AppendFile adds data at the end of name (creating it with mode and owner
// if missing), atomically: the result is written whole and renamed in.
// An existing file keeps its mode and, with KeepOwner, its owner.
func (r *Root) AppendFile(name string, data []byte, mode fs.FileMode, owner Owner) error {
	fi, err := r.Stat(name)
	switch {
	case err == nil:
		mode = ModeBits(fi.Mode())
		if owner == KeepOwner {
			owner = fileOwner(fi)
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return err
	}
	return r.AppendFileFrom(name, bytes.NewReader(data), mode, owner)
}

// AppendFileFrom writes name anew as its old content (if any) followed by
// what src yields, atomically, and gives the result mode and owner, on an
// existing file too (write_files' append). The old content is copied
// file to file and src streamed, so neither is held in memory.
func (r *Root) AppendFileFrom(name string, src io.Reader, mode fs.FileMode, owner Owner) error {
	old, err := r.Open(name)
	switch {
	case err == nil:
		defer old.Close()
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	default:
		return err
	}
	_, err = r.writeFile(name, mode, owner, writeOpts{}, func(f *os.File) error {
		if old != nil {
			// File to file: the kernel copies (copy_file_range).
			if _, err := io.Copy(f, old); err != nil {
				return err
			}
		}
		return copyFrom(f, src)
	})
	return err
}

// Symlink makes name a symlink to dest (stored as given), replacing
// whatever non-directory was at name, atomically.
func (r *Root) Symlink(dest, name string) error {
	rel, err := r.resolve(name, false)
	if err != nil {
		return err
	}
	if cur, err := r.root.Readlink(rel); err == nil && cur == dest {
		return nil
	}
	if err := r.MkdirAll(path.Dir(rel), 0o755, KeepOwner); err != nil {
		return fmt.Errorf("symlink %s: %w", name, err)
	}
	r.sweepDirOf(name)
	tmp := r.tempName(rel)
	if err := r.step(); err != nil {
		return fmt.Errorf("symlink %s: %w", name, err)
	}
	if err := r.root.Symlink(dest, tmp); err != nil {
		return fmt.Errorf("symlink %s: %w", name, unwrapPath(err))
	}
	labelled := r.labelLink(rel, tmp)
	if err := r.step(); err != nil {
		return fmt.Errorf("symlink %s: %w", name, err)
	}
	if err := r.root.Rename(tmp, rel); err != nil {
		r.root.Remove(tmp)
		return fmt.Errorf("symlink %s: %w", name, unwrapPath(err))
	}
	r.dirtiedAt(path.Dir(rel))
	r.record("symlink", name, rel, !labelled)
	return nil
}

// Remove deletes a file, an empty directory or a symlink (not its target).
// A missing name is not an error.
func (r *Root) Remove(name string) error {
	rel, err := r.resolve(name, false)
	if err != nil {
		return err
	}
	if err := r.step(); err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	if err := r.root.Remove(rel); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove %s: %w", name, unwrapPath(err))
	}
	r.dirtiedAt(path.Dir(rel))
	r.record("remove", name, "", false)
	return nil
}

// RemoveAll deletes name and everything below it, never following symlinks.
func (r *Root) RemoveAll(name string) error {
	rel, err := r.resolve(name, false)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("remove %s: refusing to remove the target's top directory", name)
	}
	if _, err := r.root.Lstat(rel); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := r.step(); err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	// A RemoveAll that failed may still have removed part of the tree.
	if err := r.root.RemoveAll(rel); err != nil {
		r.dirtiedAt(path.Dir(rel))
		return fmt.Errorf("remove %s: %w", name, unwrapPath(err))
	}
	r.dirtiedAt(path.Dir(rel))
	r.record("remove", name, "", false)
	return nil
}

// Chmod sets name's mode.
func (r *Root) Chmod(name string, mode fs.FileMode) error {
	rel, err := r.Resolve(name)
	if err != nil {
		return err
	}
	if err := r.step(); err != nil {
		return fmt.Errorf("chmod %s: %w", name, err)
	}
	if err := r.root.Chmod(rel, mode); err != nil {
		return fmt.Errorf("chmod %s: %w", name, unwrapPath(err))
	}
	r.dirtiedAt(rel)
	r.record("chmod", name, rel, false)
	return nil
}

// Chown sets name's owner; -1 keeps a field.
func (r *Root) Chown(name string, owner Owner) error {
	rel, err := r.Resolve(name)
	if err != nil {
		return err
	}
	if err := r.step(); err != nil {
		return fmt.Errorf("chown %s: %w", name, err)
	}
	if err := r.chown(rel, owner); err != nil {
		return fmt.Errorf("chown %s: %w", name, err)
	}
	r.dirtiedAt(rel)
	r.record("chown", name, rel, false)
	return nil
}

func (r *Root) chown(rel string, owner Owner) error {
	if owner.UID < 0 && owner.GID < 0 {
		return nil
	}
	return unwrapPath(r.root.Lchown(rel, owner.UID, owner.GID))
}

func (r *Root) createTemp(dir *os.Root, base string, mode fs.FileMode) (string, *os.File, error) {
	for range 10 {
		tmp := r.tempName(base)
		f, err := dir.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, mode.Perm()&0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, unwrapPath(err)
		}
		return tmp, f, nil
	}
	return "", nil, errors.New("could not create a temporary file")
}

// syncfs is unix.Syncfs; tests replace it to see which filesystems a Sync
// reached.
var syncfs = unix.Syncfs

// Sync makes every write so far durable: one syncfs(2) of the target's
// top filesystem (which also holds what commands run in the target wrote)
// and of every other filesystem the Root wrote to since the last Sync, such
// as /var or /home mounted inside the target. Callers sync in batches (the
// stages runner after each module, before its semaphore), so that "the
// module's files are durable, then its semaphore is written" holds and a
// re-run after a power cut converges; each file's own content was flushed
// before its rename.
func (r *Root) Sync() error {
	r.mu.Lock()
	dirty := r.dirty
	r.dirty = nil
	r.mu.Unlock()
	var errs []error
	done := map[uint64]bool{}
	if err := r.syncAt(".", 0, false, done); err != nil {
		errs = append(errs, err)
	}
	devs := make([]uint64, 0, len(dirty))
	for dev := range dirty {
		devs = append(devs, dev)
	}
	slices.Sort(devs)
	for _, dev := range devs {
		if done[dev] {
			continue
		}
		if err := r.syncAt(dirty[dev], dev, true, done); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// syncAt syncs the filesystem of the directory rel, or of its nearest
// existing parent when rel was removed since (a removed directory's parent
// is on its filesystem). With onDev set, a filesystem other than dev found
// there is left alone: dev was unmounted, which flushed it, or something
// was mounted over rel, and the target's top, synced first, holds what is
// under that mount.
func (r *Root) syncAt(rel string, dev uint64, onDev bool, done map[uint64]bool) error {
	f, err := r.root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	for (errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR)) && rel != "." {
		rel = path.Dir(rel)
		f, err = r.root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", path.Join(r.dir, rel), unwrapPath(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("sync %s: %w", path.Join(r.dir, rel), err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if (onDev && uint64(st.Dev) != dev) || done[uint64(st.Dev)] {
		return nil
	}
	done[uint64(st.Dev)] = true
	if err := syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("sync %s: %w", path.Join(r.dir, rel), err)
	}
	return nil
}

// removeStaleTemps removes the temporary files tempName made for base in
// dir, this boot's too.
func (r *Root) removeStaleTemps(dir *os.Root, base string) {
	d, err := dir.Open(".")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	prefix := tempPrefix(base)
	for _, n := range names {
		if suffix, ok := strings.CutPrefix(n, prefix); ok && isTempSuffix(suffix) {
			if r.step() == nil {
				dir.Remove(n)
			}
		}
	}
}

// SweepDirs sweeps each of names that is a directory in the target, as a
// write there would (see sweep). A run calls it first on where seedinit
// writes at every boot, and on where what a cut left could otherwise stay
// until a later boot writes there again.
func (r *Root) SweepDirs(names ...string) {
	for _, name := range names {
		rel, err := r.Resolve(name)
		if err != nil {
			continue
		}
		dir, err := r.root.OpenRoot(rel)
		if err != nil {
			continue
		}
		r.sweep(dir, rel)
		dir.Close()
	}
}

// sweepDirOf sweeps the directory that name (resolved) is in, if it
// exists.
func (r *Root) sweepDirOf(name string) {
	rel, err := r.resolve(name, false)
	if err != nil || rel == "." {
		return
	}
	dir, err := r.root.OpenRoot(path.Dir(rel))
	if err != nil {
		return
	}
	defer dir.Close()
	r.sweep(dir, path.Dir(rel))
}

// sweep removes from dir (rel, resolved) the temporary files that a run
// of an earlier boot left there when its power was cut between creating
// one and renaming it into place, once per directory and Root: the run
// after a cut writes where the cut one did, so what it left goes the
// first time a run writes (or would write) a file there. Only the
// writer's own names go (tempPrefix of some name, then 12 hex digits),
// and of those only the ones an earlier boot made: this boot's may be a
// write in progress in another process (the final stage, the lease
// keeper), and a run cut short in this boot leaves its own to the next.
// A directory of such a name (one being made, see mkdirAt) goes only when
// it is empty.
func (r *Root) sweep(dir *os.Root, rel string) {
	d, err := dir.Open(".")
	if err != nil {
		return
	}
	defer d.Close()
	r.sweepAt(int(d.Fd()), rel)
}

// sweepAt is sweep for the directory open as fd (O_PATH will do).
func (r *Root) sweepAt(fd int, rel string) {
	tag := r.boot
	if tag == "" {
		return // this boot's files cannot be told from older ones
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return
	}
	key := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
	r.mu.Lock()
	done := r.swept[key]
	if r.swept == nil {
		r.swept = map[[2]uint64]bool{}
	}
	r.swept[key] = true
	r.mu.Unlock()
	if done {
		return
	}
	list, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(list), rel)
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, n := range names {
		i := strings.LastIndex(n, ".seedinit-")
		if !strings.HasPrefix(n, ".") || i <= 0 {
			continue
		}
		suffix := n[i+len(".seedinit-"):]
		if !isTempSuffix(suffix) || strings.HasPrefix(suffix, tag) {
			continue
		}
		var fi unix.Stat_t
		if unix.Fstatat(fd, n, &fi, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		flags := 0
		if fi.Mode&unix.S_IFMT == unix.S_IFDIR {
			flags = unix.AT_REMOVEDIR // only when empty
		}
		if r.step() != nil {
			return
		}
		if unix.Unlinkat(fd, n, flags) == nil {
			r.dirtiedDev(uint64(st.Dev), rel)
			r.record("remove", "/"+path.Join(rel, n), "", false)
		}
	}
}

// isTempSuffix reports whether s is what tempName puts after tempPrefix:
// 12 lower-case hex digits.
func isTempSuffix(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// bootTag is the first 6 hex digits of the kernel's boot_id, which start
// the 12 of every temporary file this boot makes, so that a sweep tells
// an earlier boot's files from this one's; "" when the kernel does not
// say (no /proc yet, or none at all), and then a Root sweeps nothing.
// Only an answer is kept: a Root opened before PID 1 mounts /proc must
// not leave the later ones without it.
func bootTag() string {
	bootMu.Lock()
	defer bootMu.Unlock()
	if !bootRead {
		b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		tag := strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
		if err == nil && len(tag) >= 6 && isTempSuffix(tag[:6]+"000000") {
			bootRead, bootID = true, tag[:6]
		}
	}
	return bootID
}

var (
	bootMu   sync.Mutex
	bootRead bool
	bootID   string
)

// tempName is a name beside rel that no one else uses: tempPrefix, the
// boot's tag, and random digits. Its randomness only has to avoid
// collisions, so it comes from earlyrand: PID 1 must not wait for the
// kernel's pool to be initialised to write a file.
func (r *Root) tempName(rel string) string {
	tag := r.boot
	b := make([]byte, (12-len(tag))/2)
	earlyrand.Read(b)
	return path.Join(path.Dir(rel), tempPrefix(path.Base(rel))+tag+hex.EncodeToString(b))
}

// tempPrefix is what the temporary names of base start with; base is cut
// short where the whole name would pass NAME_MAX, so that a file with a
// name of the longest length can still be written.
func tempPrefix(base string) string {
	const fixed = len(".") + len(".seedinit-") + 12
	if len(base) > maxComponent-fixed {
		base = base[:maxComponent-fixed]
	}
	return "." + base + ".seedinit-"
}

// orKeep makes root-owned creation a no-op when seedinit does not run as
// root (tests), where chown would fail.
func (o Owner) orKeep(*Root) Owner {
	if os.Geteuid() != 0 {
		return KeepOwner
	}
	return o
}

func fileOwner(fi fs.FileInfo) Owner {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return Owner{UID: int(st.Uid), GID: int(st.Gid)}
	}
	return KeepOwner
}

func ownerMatches(fi fs.FileInfo, want Owner) bool {
	have := fileOwner(fi)
	return (want.UID < 0 || want.UID == have.UID) && (want.GID < 0 || want.GID == have.GID)
}

// unwrapPath drops os.Root's own *PathError wrapper, whose path is the
// resolved one: callers name the path the user gave.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var _ io.Closer = (*Root)(nil)
