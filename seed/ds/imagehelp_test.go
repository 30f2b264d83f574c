package ds

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/seedinit/seedinit/internal/testenv"
)

// writeTree writes files (slash paths) under a new temporary directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// makeISO builds an ISO9660 image the way Nova and cloud-localds do
// (genisoimage with Rock Ridge and Joliet), or with only one of them.
func makeISO(t *testing.T, label string, files map[string]string, extraArgs ...string) string {
	t.Helper()
	tool, err := exec.LookPath("genisoimage")
	if err != nil {
		testenv.Skip(t, "genisoimage is not installed: cannot build ISO9660 fixtures")
	}
	src := writeTree(t, files)
	out := filepath.Join(t.TempDir(), "seed.iso")
	args := append([]string{"-quiet", "-o", out, "-V", label}, extraArgs...)
	args = append(args, src)
	if b, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
		t.Fatalf("genisoimage: %v\n%s", err, b)
	}
	return out
}

// makeVFAT builds a FAT image with mkfs.vfat and fills it with mtools'
// mcopy (as cloud-localds does), never mounting it.
func makeVFAT(t *testing.T, label string, sizeKiB string, fatBits string, files map[string]string) string {
	t.Helper()
	mkfs, err := exec.LookPath("mkfs.vfat")
	if err != nil {
		testenv.Skip(t, "mkfs.vfat (dosfstools) is not installed: cannot build FAT fixtures")
	}
	mcopy, err := exec.LookPath("mcopy")
	if err != nil {
		testenv.Skip(t, "mcopy (mtools) is not installed: cannot fill FAT fixtures without mounting")
	}
	img := filepath.Join(t.TempDir(), "seed.img")
	args := []string{"-n", label, "-C", img, sizeKiB}
	if fatBits != "" {
		args = append([]string{"-F", fatBits}, args...)
	}
	if b, err := exec.Command(mkfs, args...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.vfat: %v\n%s", err, b)
	}
	src := writeTree(t, files)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	cargs := []string{"-s", "-i", img}
	for _, e := range entries {
		cargs = append(cargs, filepath.Join(src, e.Name()))
	}
	cargs = append(cargs, "::/")
	cmd := exec.Command(mcopy, cargs...)
	cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mcopy: %v\n%s", err, b)
	}
	return img
}

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
