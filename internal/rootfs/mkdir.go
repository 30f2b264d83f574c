package rootfs

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"golang.org/x/sys/unix"
)

// mkdirAll creates rel (resolved, target-relative) and its missing
// parents, and returns a handle on it (r.top for "."), which the caller
// closes. name is the caller's name, for messages.
//
// It walks down from the top holding one directory handle at a time and
// creates each missing level relative to its parent's handle, so a path n
// levels deep costs O(n) system calls; going through os.Root would look up
// every prefix from the top again, O(n²). The walk keeps os.Root's
// guarantee by the same means: each step opens one plain component (never
// "..") below a handle it holds, with O_NOFOLLOW, so a level that was
// swapped for a symlink since resolve fails the walk instead of leading
// out of the target.
func (r *Root) mkdirAll(name, rel string, mode fs.FileMode, owner Owner) (int, error) {
	fail := func(err error) (int, error) {
		return -1, fmt.Errorf("create directory %s: %w", name, err)
	}
	if rel == "." {
		return r.top, nil
	}
	if mkdirAllHook != nil {
		mkdirAllHook(rel)
	}
	dir := r.top
	release := func() {
		if dir != r.top {
			unix.Close(dir)
		}
	}
	full := "/" + rel
	start := 0
	dirtied := false
	for start <= len(rel) {
		end := start
		for end < len(rel) && rel[end] != '/' {
			end++
		}
		part := rel[start:end]
		if part == "" || part == "." || part == ".." {
			release()
			return fail(fmt.Errorf("%q is not a resolved path", rel))
		}
		fd, err := openDirNoFollow(dir, part)
		if errors.Is(err, unix.ENOENT) {
			parent := "."
			if start > 0 {
				parent = rel[:start-1]
			}
			r.sweepAt(dir, parent)
			fd, err = r.mkdirAt(dir, part, mode, owner)
			if err == nil {
				// A new directory is on its parent's filesystem:
				// noting the first one's parent covers them all.
				if !dirtied {
					r.dirtiedFD(dir, path.Dir(rel[:end]))
					dirtied = true
				}
				r.record("mkdir", full[:1+end], rel[:end], true)
			}
		}
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			err = fmt.Errorf("%s is not a directory", full[:1+end])
		}
		release()
		if err != nil {
			return fail(err)
		}
		dir = fd
		start = end + 1
	}
	return dir, nil
}

// mkdirAllHook, when tests set it, runs between resolve and the walk: it
// changes the tree there as a racing process could.
var mkdirAllHook func(rel string)

// openDirNoFollow opens the directory part below dir without following a
// symlink.
func openDirNoFollow(dir int, part string) (int, error) {
	for {
		fd, err := unix.Openat(dir, part, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// mkdirAt creates the directory part below dir with mode and owner and
// returns a handle on it. The directory is made under a temporary name
// (tempName's, which an earlier boot's sweep removes when it stays
// empty), starts as 0700, so that nobody else can use it before it has
// its owner and mode and so that seedinit can open it to set them
// whatever mode was asked for, gets them through that handle, never
// through a name that could have been swapped, and is then renamed into
// place: a power cut never leaves a directory of part's name without its
// owner and mode, which no later run would give it. A directory someone
// else made in the meantime is opened and left as it is.
func (r *Root) mkdirAt(dir int, part string, mode fs.FileMode, owner Owner) (int, error) {
	if err := r.step(); err != nil {
		return -1, err
	}
	var tmp string
	for range 10 {
		tmp = path.Base(r.tempName(part))
		err := unix.Mkdirat(dir, tmp, 0o700)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return -1, err
		}
		break
	}
	fd, err := unix.Openat(dir, tmp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Unlinkat(dir, tmp, unix.AT_REMOVEDIR)
		return -1, err
	}
	fail := func(err error) (int, error) {
		unix.Close(fd)
		if !r.isCut() {
			unix.Unlinkat(dir, tmp, unix.AT_REMOVEDIR)
		}
		return -1, err
	}
	// Owner first: chown clears setuid and setgid, so the mode comes last.
	if owner.UID >= 0 || owner.GID >= 0 {
		if err := unix.Fchown(fd, owner.UID, owner.GID); err != nil {
			return fail(err)
		}
	}
	if err := unix.Fchmod(fd, chmodBits(mode)); err != nil {
		return fail(err)
	}
	if err := r.step(); err != nil {
		return fail(err)
	}
	// RENAME_NOREPLACE: a directory someone made meanwhile stays theirs.
	err = unix.Renameat2(dir, tmp, dir, part, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EEXIST) {
		unix.Close(fd)
		unix.Unlinkat(dir, tmp, unix.AT_REMOVEDIR)
		return openDirNoFollow(dir, part)
	}
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// A filesystem without RENAME_NOREPLACE: a plain rename, which
		// replaces only an empty directory made in the meantime.
		err = unix.Renameat(dir, tmp, dir, part)
		if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			unix.Unlinkat(dir, tmp, unix.AT_REMOVEDIR)
			return openDirNoFollow(dir, part)
		}
	}
	if err != nil {
		return fail(err)
	}
	return fd, nil
}

// chmodBits is ModeBits(m) as chmod(2) takes it.
func chmodBits(m fs.FileMode) uint32 {
	n := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		n |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		n |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		n |= unix.S_ISVTX
	}
	return n
}

// dirtiedFD is dirtied for an open directory.
func (r *Root) dirtiedFD(fd int, rel string) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		r.dirtiedDev(uint64(st.Dev), rel)
	}
}
