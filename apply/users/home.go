package users

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/seedinit/seedinit/apply/target"
)

// CreateHome makes p's home directory as useradd -m does: the directory
// with the policy's HOME_MODE, owned by the user, filled from the skel
// directory with every copy owned by the user. A home that exists already
// is left alone (useradd only warns), and so is its content. It reports
// whether it created the directory.
func CreateHome(root *target.Root, p Passwd, policy Policy) (bool, error) {
	if p.Home == "" || p.Home == "/" {
		return false, nil
	}
	if _, err := root.Lstat(p.Home); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("create home of %s: %w", p.Name, err)
	}
	owner := ownedBy(p.UID, p.GID)
	if err := root.MkdirAll(path.Dir(p.Home), 0o755, ownedBy(0, 0)); err != nil {
		return false, fmt.Errorf("create home of %s: %w", p.Name, err)
	}
	if err := root.MkdirAll(p.Home, policy.HomeMode, owner); err != nil {
		return false, fmt.Errorf("create home of %s: %w", p.Name, err)
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

// copyTree copies the files, directories and symlinks under src to dst
// with their modes, all owned by owner; it keeps going past a bad entry.
func copyTree(root *target.Root, src, dst string, owner target.Owner) error {
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
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			dest, err := root.Readlink(from)
			if err == nil {
				// Left owned by root: target.Root has no lchown, and a
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
func ownedBy(uid, gid int) target.Owner {
	if os.Geteuid() != 0 {
		return target.KeepOwner
	}
	return target.Owner{UID: uid, GID: gid}
}
