// Package atomicfile replaces a file on the machine's own filesystem
// whole or not at all: the state files of the lease keeper and of
// seedinit serve, seeds saved by `seedinit fetch`, images written by the
// builders. Files in a target root go through internal/rootfs instead,
// which resolves the path inside the root first.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces name with data, mode perm: a temporary file beside it
// (so that the rename stays on one filesystem), written, given its mode,
// synced, then renamed over name, and the folder synced so that the
// rename survives a power cut too. A reader sees the old file or the new
// one, never a part; on any error name is left as it was and the
// temporary file is gone.
func Write(name string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		// CreateTemp made it 0600; Chmod, not the umask, sets perm.
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
