package boot

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seedinit/seedinit/internal/testenv"
)

// The child started after the switch keeps this program in the root: a
// copy linked from the PATH, made once per build, and none in a root
// that has a seedinit of its own.
func TestKeepSelf(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "KeepSelf writes the copy owned by root: needs root")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	program := append([]byte("\x7fELF pretend seedinit "), bytes.Repeat([]byte{7}, 300<<10)...)
	selfPath := filepath.Join(t.TempDir(), "seedinit")
	must(os.WriteFile(selfPath, program, 0o755))
	self, err := os.Open(selfPath)
	must(err)
	defer self.Close()
	log := slog.New(slog.DiscardHandler)

	root := t.TempDir()
	must(os.MkdirAll(filepath.Join(root, "usr/local/bin"), 0o755))
	// An older seedinit left the directory private (it held the random
	// seed alone): the copy must be reachable by everyone.
	must(os.MkdirAll(filepath.Join(root, "var/lib/seedinit"), 0o700))
	must(KeepSelf(root, self, log))
	kept := filepath.Join(root, KeptBinary)
	got, err := os.ReadFile(kept)
	must(err)
	if !bytes.Equal(got, program) {
		t.Fatalf("kept copy differs from the program (%d bytes, want %d)", len(got), len(program))
	}
	fi, err := os.Stat(kept)
	must(err)
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("kept copy mode %v, want 0755", fi.Mode().Perm())
	}
	if di, err := os.Stat(filepath.Dir(kept)); err != nil || di.Mode().Perm() != 0o755 {
		t.Errorf("directory of the copy: %v %v, want 0755", di.Mode().Perm(), err)
	}
	if dest, err := os.Readlink(filepath.Join(root, LinkedBinary)); err != nil || dest != KeptBinary {
		t.Errorf("link on the PATH: %q %v, want %q", dest, err, KeptBinary)
	}

	// The same build again (a later boot): not written again.
	old := time.Now().Add(-time.Hour)
	must(os.Chtimes(kept, old, old))
	must(KeepSelf(root, self, log))
	if fi, err := os.Stat(kept); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("the same build was written again: %v", err)
	}

	// A root with its own seedinit on the PATH gets no copy.
	own := t.TempDir()
	must(os.MkdirAll(filepath.Join(own, "usr/bin"), 0o755))
	must(os.WriteFile(filepath.Join(own, "usr/bin/seedinit"), []byte("#!/bin/sh\n"), 0o755))
	must(KeepSelf(own, self, log))
	if _, err := os.Lstat(filepath.Join(own, KeptBinary)); !os.IsNotExist(err) {
		t.Errorf("a root with its own seedinit got a copy: %v", err)
	}
}
