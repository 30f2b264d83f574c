package seedimg

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/seedinit/seedinit/seed"
)

// bootstrapDir is where a seed disk carries its bootstrap tree (seed/ds's
// BootstrapDir).
const bootstrapDir = "bootstrap"

// maxBootstrapBuild bounds a tree read for an image: what a reader takes
// (seed/ds reads at most 64 MiB of it).
const maxBootstrapBuild = 64 << 20

// ReadBootstrapDir reads a tree on the build host as an image carries it:
// each file and directory below dir, parents first, with its permission
// bits and owner (set-id bits are no part of it: the reader drops them).
// A link or a device is refused: what it points to is not the image's.
func ReadBootstrapDir(dir string) ([]seed.BootstrapFile, error) {
	var out []seed.BootstrapFile
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		f := seed.BootstrapFile{Path: filepath.ToSlash(rel), Dir: fi.IsDir(), Mode: uint32(fi.Mode().Perm()), UID: -1, GID: -1, Where: p}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			f.UID, f.GID = int(st.Uid), int(st.Gid)
		}
		switch {
		case fi.IsDir():
		case fi.Mode().IsRegular():
			if total += fi.Size(); total > maxBootstrapBuild {
				return fmt.Errorf("more than %d bytes in all", maxBootstrapBuild)
			}
			if f.Content, err = os.ReadFile(p); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: neither a file nor a directory (%s)", p, fi.Mode().Type())
		}
		out = append(out, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the bootstrap tree %s: %w", dir, err)
	}
	return out, nil
}

// stageBootstrap gives the staged tree below dir the modes and owners of
// o's bootstrap tree, which Rock Ridge records from the staged files; an
// owner is kept only when seedinit builds as root (else the builder's).
func stageBootstrap(dir string, tree []seed.BootstrapFile) error {
	asRoot := os.Geteuid() == 0
	// Children before parents, so that a directory made 0500 does not
	// keep its own entries from being changed.
	for i := len(tree) - 1; i >= 0; i-- {
		f := tree[i]
		p := filepath.Join(dir, bootstrapDir, filepath.FromSlash(f.Path))
		if f.Dir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		}
		if asRoot && f.UID >= 0 && f.GID >= 0 {
			if err := os.Lchown(p, f.UID, f.GID); err != nil {
				return err
			}
		}
		if err := os.Chmod(p, fs.FileMode(f.Mode&0o777)); err != nil {
			return err
		}
	}
	return nil
}
