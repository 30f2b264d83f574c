package ds

import (
	"os"
	"testing"
)

func openImageFile(t *testing.T, path string) *ImageFS {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := OpenImage(f, st.Size())
	if err != nil {
		t.Fatalf("OpenImage %s: %v", path, err)
	}
	return fsys
}
