package boot

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/testenv"
)

// A usrmerge root, hard links and copies: every way an init candidate can
// be seedinit itself is recognised by the file, never by its name.
func TestIsSameProgram(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	program := []byte("\x7fELF pretend seedinit " + string(make([]byte, 200<<10)))
	must(os.MkdirAll(filepath.Join(dir, "usr/sbin"), 0o755))
	must(os.Symlink("usr/sbin", filepath.Join(dir, "sbin")))
	self := filepath.Join(dir, "usr/sbin/seedinit")
	must(os.WriteFile(self, program, 0o755))
	must(os.Link(self, filepath.Join(dir, "usr/sbin/init-hardlink")))
	must(os.Symlink("seedinit", filepath.Join(dir, "usr/sbin/init")))
	must(os.WriteFile(filepath.Join(dir, "usr/sbin/seedinit-copy"), program, 0o755))
	other := append([]byte(nil), program...)
	other[len(other)-1] = 'x' // same size, one byte apart
	must(os.WriteFile(filepath.Join(dir, "usr/sbin/real-init"), other, 0o755))
	must(os.WriteFile(filepath.Join(dir, "usr/sbin/small-init"), []byte("#!/bin/sh\n"), 0o755))

	selfFile, err := os.Open(self)
	must(err)
	defer selfFile.Close()
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"sbin/seedinit", true}, // /sbin -> usr/sbin: the string differs, the file does not
		{"usr/sbin/seedinit", true},
		{"usr/sbin/init", true},
		{"usr/sbin/init-hardlink", true},
		{"usr/sbin/seedinit-copy", true},
		{"sbin/real-init", false},
		{"sbin/small-init", false},
	} {
		got, err := isSameProgram(filepath.Join(dir, tc.path), selfFile)
		if err != nil || got != tc.want {
			t.Errorf("isSameProgram(%s) = %v, %v; want %v", tc.path, got, err, tc.want)
		}
	}
	if _, err := isSameProgram(filepath.Join(dir, "sbin/missing"), selfFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing candidate: %v, want not-exist", err)
	}
	if got, err := isSameProgram(filepath.Join(dir, "sbin/seedinit"), nil); got || err != nil {
		t.Errorf("without knowing itself: %v, %v; want false (exec rather than no boot)", got, err)
	}
}

func TestInitCandidates(t *testing.T) {
	p := &PID1{Opts: Options{Init: "/sbin/init"}}
	got := p.initCandidates()
	want := []string{"/sbin/init", "/etc/init", "/bin/init", "/bin/sh"}
	if len(got) != len(want) {
		t.Fatalf("candidates %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("candidates %q, want %q", got, want)
		}
	}
	p.Opts.Init = "/sbin/seedinit"
	if got := p.initCandidates(); got[0] != "/sbin/seedinit" || len(got) != 5 {
		t.Fatalf("candidates %q", got)
	}
}

func TestIsMountPoint(t *testing.T) {
	if !isMountPoint("/") {
		t.Error(`"/" is not a mount point?`)
	}
	if !isMountPoint("/proc") {
		t.Error("/proc is not a mount point?")
	}
	if isMountPoint(t.TempDir()) {
		t.Error("a fresh temporary directory is a mount point?")
	}
}

// The initramfs is told by what "/" is: a ramfs or tmpfs.
func TestIsRamfs(t *testing.T) {
	if isRamfs("/proc") {
		t.Error("/proc taken for a ramfs")
	}
	testenv.NeedRoot(t, "mounting a tmpfs")
	m := filepath.Join(t.TempDir(), "m")
	if err := os.Mkdir(m, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", m, "tmpfs", 0, ""); err != nil {
		testenv.Skipf(t, "cannot mount a tmpfs here: %v", err)
	}
	defer unix.Unmount(m, 0)
	if !isRamfs(m) {
		t.Error("a tmpfs not seen as one")
	}
	if !isMountPoint(m) {
		t.Error("a fresh tmpfs is not a mount point?")
	}
}
