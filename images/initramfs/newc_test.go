package initramfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/u-root/u-root/pkg/cpio"

	"github.com/seedinit/seedinit/internal/testenv"
)

// writeNewc writes recs and the trailer into a byte slice.
func writeNewc(t *testing.T, recs ...record) []byte {
	t.Helper()
	var buf bytes.Buffer
	cw := newNewcWriter(&buf)
	for _, r := range recs {
		if err := cw.Write(r); err != nil {
			t.Fatalf("Write(%s): %v", r.Name, err)
		}
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestNewcReadByURoot writes members of every kind and name length (so
// that every padding case occurs) and reads them back with u-root's newc
// reader, an implementation independent of ours.
func TestNewcReadByURoot(t *testing.T) {
	recs := []record{
		dirRecord("etc", 0o755),
		fileRecord("etc/a", 0o644, []byte("1")),
		fileRecord("etc/ab", 0o600, []byte("12")),
		fileRecord("etc/abc", 0o640, []byte("123")),
		fileRecord("etc/abcd", 0o444, []byte("1234")),
		fileRecord("etc/empty", 0o644, nil),
		charDevRecord("dev/console", 0o600, 5, 1),
		fileRecord("lib/modules/6.1.0/kernel/x.ko", 0o644, bytes.Repeat([]byte{0xab}, 4097)),
		fileRecord("/init", 0o755, []byte("#!/bin/sh\n")),
	}
	raw := writeNewc(t, recs...)
	got, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(raw)))
	if err != nil {
		t.Fatalf("u-root cannot read the archive: %v", err)
	}
	type member struct {
		Name           string
		Mode           uint64
		Data           string
		NLink          uint64
		RMajor, RMinor uint64
	}
	var members []member
	inos := map[uint64]string{}
	for _, r := range got {
		var data []byte
		if r.ReaderAt != nil {
			data, _ = io.ReadAll(io.NewSectionReader(r.ReaderAt, 0, int64(r.FileSize)))
		}
		if other, dup := inos[r.Ino]; dup {
			t.Errorf("%s and %s share inode %d: the kernel would link them", r.Name, other, r.Ino)
		}
		inos[r.Ino] = r.Name
		if r.UID != 0 || r.GID != 0 || r.MTime != 0 {
			t.Errorf("%s: uid %d gid %d mtime %d, want all 0", r.Name, r.UID, r.GID, r.MTime)
		}
		members = append(members, member{r.Name, r.Mode, string(data), r.NLink, r.Rmajor, r.Rminor})
	}
	want := []member{
		{"etc", cpio.S_IFDIR | 0o755, "", 2, 0, 0},
		{"etc/a", cpio.S_IFREG | 0o644, "1", 1, 0, 0},
		{"etc/ab", cpio.S_IFREG | 0o600, "12", 1, 0, 0},
		{"etc/abc", cpio.S_IFREG | 0o640, "123", 1, 0, 0},
		{"etc/abcd", cpio.S_IFREG | 0o444, "1234", 1, 0, 0},
		{"etc/empty", cpio.S_IFREG | 0o644, "", 1, 0, 0},
		{"dev", cpio.S_IFDIR | 0o755, "", 2, 0, 0},
		{"dev/console", cpio.S_IFCHR | 0o600, "", 1, 5, 1},
		{"lib", cpio.S_IFDIR | 0o755, "", 2, 0, 0},
		{"lib/modules", cpio.S_IFDIR | 0o755, "", 2, 0, 0},
		{"lib/modules/6.1.0", cpio.S_IFDIR | 0o755, "", 2, 0, 0},
		{"lib/modules/6.1.0/kernel", cpio.S_IFDIR | 0o755, "", 2, 0, 0},
		{"lib/modules/6.1.0/kernel/x.ko", cpio.S_IFREG | 0o644, strings.Repeat("\xab", 4097), 1, 0, 0},
		{"init", cpio.S_IFREG | 0o755, "#!/bin/sh\n", 1, 0, 0},
	}
	if diff := cmp.Diff(want, members); diff != "" {
		t.Errorf("members read back (-want +got):\n%s", diff)
	}
	if len(raw)%4 != 0 {
		t.Errorf("archive of %d bytes, not a multiple of 4", len(raw))
	}
	if !bytes.Equal(raw, writeNewc(t, recs...)) {
		t.Error("the same records gave different bytes")
	}
}

// TestNewcGNUCpio lists the archive with GNU cpio when it is installed.
func TestNewcGNUCpio(t *testing.T) {
	bin, err := exec.LookPath("cpio")
	if err != nil {
		testenv.Skip(t, "GNU cpio not installed")
	}
	raw := writeNewc(t, fileRecord("etc/hostname", 0o644, []byte("x\n")), charDevRecord("dev/null", 0o666, 1, 3))
	cmd := exec.Command(bin, "-t", "-v", "--quiet")
	cmd.Stdin = bytes.NewReader(raw)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cpio -t: %v\n%s", err, out)
	}
	for _, want := range []string{"etc\n", "etc/hostname\n", "dev/null\n", "crw-rw-rw-"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("cpio -tv lacks %q:\n%s", want, out)
		}
	}
	dir := t.TempDir()
	cmd = exec.Command(bin, "-i", "-d", "--quiet", "--no-absolute-filenames", "etc/hostname")
	cmd.Dir, cmd.Stdin = dir, bytes.NewReader(raw)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cpio -i: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "etc/hostname")); err != nil || string(b) != "x\n" {
		t.Errorf("extracted etc/hostname = %q, %v", b, err)
	}
}

func TestNewcRejects(t *testing.T) {
	tests := map[string][]record{
		"a file twice":           {fileRecord("init", 0o755, nil), fileRecord("init", 0o644, nil)},
		"a file where a dir was": {dirRecord("etc", 0o755), fileRecord("etc", 0o644, nil)},
		"a member inside a file": {fileRecord("init", 0o755, nil), fileRecord("init/x", 0o644, nil)},
		"an empty name":          {fileRecord("", 0o644, nil)},
		"a name out of the root": {fileRecord("../etc/passwd", 0o644, nil)},
		"the root itself":        {dirRecord("/", 0o755)},
	}
	for name, recs := range tests {
		cw := newNewcWriter(io.Discard)
		var err error
		for _, r := range recs {
			if err = cw.Write(r); err != nil {
				break
			}
		}
		if err == nil || !strings.HasPrefix(err.Error(), "cpio: ") {
			t.Errorf("%s: error %v, want a cpio error", name, err)
		}
	}
	// A directory named again after being written as a parent is fine.
	cw := newNewcWriter(io.Discard)
	for _, r := range []record{fileRecord("etc/x", 0o644, nil), dirRecord("etc", 0o755)} {
		if err := cw.Write(r); err != nil {
			t.Errorf("Write(%s): %v", r.Name, err)
		}
	}
}

type failingWriter struct{ after int }

func (f *failingWriter) Write(b []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(b), nil
}

func TestNewcWriteError(t *testing.T) {
	for after := 0; after < 4; after++ {
		cw := newNewcWriter(&failingWriter{after: after})
		err := cw.Write(fileRecord("etc/a", 0o644, []byte("abc")))
		if err == nil {
			err = cw.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("after %d writes: error %v, want the writer's", after, err)
		}
	}
}
