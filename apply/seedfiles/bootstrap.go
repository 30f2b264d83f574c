package seedfiles

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

func init() {
	apply.Register(apply.Module{Name: "bootstrap_tree", Frequency: apply.PerInstance, Run: runBootstrapTree})
}

// BootstrapDirFile names, in the image, the directory a seed's bootstrap
// tree is copied to: one absolute path, where the image's own first-boot
// agent looks for its config/, license/ and the rest. An image without it
// takes no tree.
const BootstrapDirFile = "/etc/seedinit/bootstrap-dir"

// runBootstrapTree copies the seed's bootstrap tree below the directory
// the image names, unchanged: each file byte for byte with the mode and
// owner the medium gives (the manifest's under seedinit.trust=require),
// but never a set-id or sticky bit (a medium must not make a program
// run as someone else); a file the medium gives no mode 0644, a
// directory 0755, root's. Files already there are replaced, others left
// as they are. Content is never logged.
func runBootstrapTree(ctx context.Context, env *apply.Env) error {
	tree := env.Seed.Bootstrap
	if len(tree) == 0 {
		return apply.Skip("the seed has no bootstrap tree")
	}
	b, err := env.Root.ReadFile(BootstrapDirFile)
	if errors.Is(err, fs.ErrNotExist) {
		env.Warn("the seed has a bootstrap tree (%d entries) and the image names no place for it (%s): not copied", len(tree), BootstrapDirFile)
		return apply.Skip("no %s in the image", BootstrapDirFile)
	}
	if err != nil {
		return fmt.Errorf("copy the bootstrap tree: read %s: %w", BootstrapDirFile, err)
	}
	dest, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	dest = strings.TrimSpace(dest)
	if !path.IsAbs(dest) || path.Clean(dest) != dest || dest == "/" {
		return fmt.Errorf("copy the bootstrap tree: %s says %q: want an absolute, clean directory other than /", BootstrapDirFile, dest)
	}
	asRoot := os.Geteuid() == 0
	ownerOf := func(uid, gid int) rootfs.Owner {
		switch {
		case !asRoot:
			return rootfs.KeepOwner
		case uid < 0 || gid < 0:
			return rootfs.Owner{UID: 0, GID: 0}
		}
		return rootfs.Owner{UID: uid, GID: gid}
	}
	var errs []error
	files, size := 0, 0
	for _, f := range tree {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("copy the bootstrap tree: stopped before %s: %w", f.Path, err))
			break
		}
		if f.Path == "" || path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == ".." || strings.HasPrefix(f.Path, "../") {
			errs = append(errs, fmt.Errorf("copy the bootstrap tree: %q is not a path below it", f.Path))
			continue
		}
		p := path.Join(dest, f.Path)
		mode := fs.FileMode(f.Mode & 0o777)
		owner := ownerOf(f.UID, f.GID)
		if f.Dir {
			if err := env.Root.MkdirAll(p, mode, owner); err != nil {
				errs = append(errs, fmt.Errorf("copy the bootstrap tree: %s: %w", p, err))
				continue
			}
			// A directory there before keeps its place, and takes the
			// tree's mode and owner.
			if err := env.Root.Chmod(p, mode); err != nil {
				errs = append(errs, fmt.Errorf("copy the bootstrap tree: %s: %w", p, err))
			}
			if owner != rootfs.KeepOwner {
				if err := env.Root.Chown(p, owner); err != nil {
					errs = append(errs, fmt.Errorf("copy the bootstrap tree: %s: %w", p, err))
				}
			}
			continue
		}
		if err := env.Root.MkdirAll(path.Dir(p), 0o755, ownerOf(-1, -1)); err != nil {
			errs = append(errs, fmt.Errorf("copy the bootstrap tree: %s: %w", path.Dir(p), err))
			continue
		}
		if err := env.Root.WriteFile(p, f.Content, mode, owner); err != nil {
			errs = append(errs, fmt.Errorf("copy the bootstrap tree: %s: %w", p, err))
			continue
		}
		files++
		size += len(f.Content)
	}
	env.Log.Info("bootstrap tree copied", "to", dest, "files", files, "bytes", size, "from", tree[0].Where)
	return errors.Join(errs...)
}
