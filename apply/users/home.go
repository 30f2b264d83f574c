package users

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// CreateHome makes p's home directory as useradd -m does: the directory
// with the policy's HOME_MODE, owned by the user, filled from the skel
// directory with every copy owned by the user. A home that exists already
// is left alone (useradd only warns), and so is its content. It reports
// whether it created the directory.
func CreateHome(root *rootfs.Root, p Passwd, policy Policy) (bool, error) {
	return makeHome(root, p, policy, false)
}

// makeHome is CreateHome; with resume, a home that exists is one a run
// stopped by a power cut was making (the user's home is recorded as to be
// made, see pendingHomesFile): it gets its owner and mode, and what of
// the skeleton is missing, whose files were each written whole or not at
// all.
func makeHome(root *rootfs.Root, p Passwd, policy Policy, resume bool) (bool, error) {
	if p.Home == "" || p.Home == "/" {
		return false, nil
	}
	owner := ownedBy(p.UID, p.GID)
	fi, err := root.Lstat(p.Home)
	switch {
	case err == nil && (!resume || !fi.IsDir()):
		return false, nil
	case err == nil:
		if err := setModeOwner(root, p.Home, fi, policy.HomeMode, owner); err != nil {
			return false, fmt.Errorf("complete home of %s: %w", p.Name, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("create home of %s: %w", p.Name, err)
	default:
		if err := root.MkdirAll(path.Dir(p.Home), 0o755, ownedBy(0, 0)); err != nil {
			return false, fmt.Errorf("create home of %s: %w", p.Name, err)
		}
		if err := root.MkdirAll(p.Home, policy.HomeMode, owner); err != nil {
			return false, fmt.Errorf("create home of %s: %w", p.Name, err)
		}
	}
	if policy.Skel == "" {
		return true, nil
	}
	if fi, err := root.Stat(policy.Skel); err != nil || !fi.IsDir() {
		return true, nil
	}
	if err := copyTree(root, policy.Skel, p.Home, owner); err != nil {
		return true, fmt.Errorf("create home of %s: copy %s: %w", p.Name, policy.Skel, err)
	}
	return true, nil
}

// setModeOwner gives the directory name (fi) mode and owner where a cut
// left it without them (made 0700, then given its owner and mode).
func setModeOwner(root *rootfs.Root, name string, fi fs.FileInfo, mode fs.FileMode, owner rootfs.Owner) error {
	have := statOwner(fi)
	if (owner.UID >= 0 && owner.UID != have.UID) || (owner.GID >= 0 && owner.GID != have.GID) {
		if err := root.Chown(name, owner); err != nil {
			return err
		}
	}
	if rootfs.ModeBits(fi.Mode()) != rootfs.ModeBits(mode) {
		return root.Chmod(name, mode)
	}
	return nil
}

// copyTree copies the files, directories and symlinks under src to dst
// with their modes, all owned by owner; it keeps going past a bad entry.
// What is in dst already is kept: only a home a cut left half made has
// anything there, each file whole (written atomically) and each directory
// given its mode and owner again.
func copyTree(root *rootfs.Root, src, dst string, owner rootfs.Owner) error {
	entries, err := root.ReadDir(src)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		from, to := path.Join(src, e.Name()), path.Join(dst, e.Name())
		fi, err := root.Lstat(from)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		there, err := root.Lstat(to)
		switch {
		case err == nil && fi.IsDir() && there.IsDir():
			if err := setModeOwner(root, to, there, fi.Mode().Perm(), owner); err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, copyTree(root, from, to, owner))
			continue
		case err == nil:
			continue
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, err)
			continue
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			dest, err := root.Readlink(from)
			if err == nil {
				// Left owned by root: rootfs.Root has no lchown, and a
				// link's owner grants nothing.
				err = root.Symlink(dest, to)
			}
			errs = append(errs, err)
		case fi.IsDir():
			if err := root.MkdirAll(to, fi.Mode().Perm(), owner); err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, copyTree(root, from, to, owner))
		case fi.Mode().IsRegular():
			data, err := root.ReadFile(from)
			if err == nil {
				err = root.WriteFile(to, data, fi.Mode().Perm(), owner)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ownedBy is uid:gid when seedinit runs as root. Only root can give files
// away: an unprivileged apply (an image built as a user, a test) keeps
// its own ids rather than fail, as write_files and the ssh module do.
func ownedBy(uid, gid int) rootfs.Owner {
	if os.Geteuid() != 0 {
		return rootfs.KeepOwner
	}
	return rootfs.Owner{UID: uid, GID: gid}
}
