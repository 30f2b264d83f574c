package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWholeWithMode(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "state.json")
	if err := os.WriteFile(name, []byte("old, longer than the new content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(name, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name)
	if err != nil || string(b) != "new\n" {
		t.Fatalf("content = %q, %v; want %q", b, err, "new\n")
	}
	fi, err := os.Stat(name)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	assertOnly(t, dir, "state.json")
}

// A mode wider than the umask is the one asked for, not the umask's.
func TestWriteModeIgnoresUmask(t *testing.T) {
	name := filepath.Join(t.TempDir(), "seed")
	if err := Write(name, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode = %v, %v; want 0755", fi.Mode().Perm(), err)
	}
}

// A write that cannot finish leaves the old file and no temporary one.
func TestWriteFailureKeepsOldAndLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "keep")
	if err := os.Mkdir(name, 0o755); err != nil { // a rename over a folder fails
		t.Fatal(err)
	}
	if err := Write(name, []byte("x"), 0o644); err == nil {
		t.Fatal("Write over a folder succeeded")
	}
	if fi, err := os.Stat(name); err != nil || !fi.IsDir() {
		t.Fatalf("the folder was not left as it was: %v, %v", fi, err)
	}
	assertOnly(t, dir, "keep")
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if len(got) != len(names) {
		t.Fatalf("%s holds %q, want only %q", dir, got, names)
	}
	for i := range names {
		if got[i] != names[i] {
			t.Fatalf("%s holds %q, want only %q", dir, got, names)
		}
	}
}
