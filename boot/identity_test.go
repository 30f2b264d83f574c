package boot

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/testenv"
)

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
