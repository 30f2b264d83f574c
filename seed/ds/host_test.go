package ds

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/seedinit/seedinit/apply/target"
	"github.com/seedinit/seedinit/seed"
)

// TestRootTreeRefusesPipes: a seed directory's user-data that is a named
// pipe used to block the read, and PID 1 with it, forever.
func TestRootTreeRefusesPipes(t *testing.T) {
	dir := t.TempDir()
	seedDir := filepath.Join(dir, "var/lib/cloud/seed/nocloud")
	if err := os.MkdirAll(seedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(seedDir, "user-data"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := target.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	_, err = rootTree{root: root, dir: "/var/lib/cloud/seed/nocloud"}.ReadFile("user-data")
	if !errors.Is(err, seed.ErrNotRegular) {
		t.Errorf("ReadFile of a named pipe: %v, want %v", err, seed.ErrNotRegular)
	}
}
