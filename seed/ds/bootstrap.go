package ds

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/seedinit/seedinit/seed"
)

// BootstrapDir is the directory of a seed disk (cidata, config-2) whose
// tree the image's own first-boot agent is handed unchanged: a vendor's
// bootstrap layout (config/, license/, software/, content/), which the
// bootstrap_tree module copies where the image says.
const BootstrapDir = "bootstrap"

// maxBootstrap bounds a tree's content, all files together: it is read
// whole by PID 1 (a license, configs, content updates; not software
// images); each file is bound by the disk reader's limit too.
const maxBootstrap = 64 << 20

// readBootstrap reads the bootstrap tree of a seed disk; none when the
// disk has no bootstrap/. What is neither a file nor a directory (a link,
// a device, which Rock Ridge can record) is passed over and named in the
// log; a tree over the bound is refused whole.
func readBootstrap(env *Env, fsys *ImageFS, where string) ([]seed.BootstrapFile, error) {
	entries, err := fsys.Tree(BootstrapDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s/%s: %w", where, BootstrapDir, err)
	}
	var out []seed.BootstrapFile
	var total int64
	for _, e := range entries {
		f := seed.BootstrapFile{Path: e.Path, Dir: e.Dir, UID: -1, GID: -1, Where: where + "/" + BootstrapDir + "/" + e.Path}
		switch {
		case e.Other:
			env.Logger().Warn("bootstrap tree: neither a file nor a directory; passed over", "path", f.Where)
			continue
		case e.Owned:
			f.Mode, f.UID, f.GID = e.Mode, int(e.UID), int(e.GID)
		case e.Dir:
			f.Mode = 0o755
		default:
			f.Mode = 0o644
		}
		if !e.Dir {
			if total += e.Size; total > maxBootstrap {
				return nil, fmt.Errorf("read %s/%s: more than %d bytes in all", where, BootstrapDir, maxBootstrap)
			}
			if f.Content, err = e.Read(); err != nil {
				return nil, fmt.Errorf("read %s: %w", f.Where, err)
			}
		}
		out = append(out, f)
	}
	return out, nil
}
