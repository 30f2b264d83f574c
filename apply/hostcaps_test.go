package apply

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/seedinit/seedinit/internal/rootfs"

	"github.com/seedinit/seedinit/internal/testenv"
)

// The host System offers the optional capabilities modules look for; for
// a target that is not the running system each refuses rather than touch
// this machine.
func TestHostCapabilitiesRefuseOfflineTargets(t *testing.T) {
	root, err := rootfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var sys System = &HostSystem{Root: root}
	if _, ok := sys.(PowerScheduler); !ok {
		t.Fatal("HostSystem is not a PowerScheduler")
	}
	h := sys.(*HostSystem)
	if err := h.AddRandom([]byte("x")); err == nil {
		t.Error("AddRandom on an offline target must refuse")
	}
	if err := h.SchedulePowerState(t.Context(), PowerRequest{Mode: "reboot"}); err == nil {
		t.Error("SchedulePowerState on an offline target must refuse")
	}
	if err := h.RunPendingPower(t.Context()); err != nil {
		t.Errorf("nothing pending: %v", err)
	}
}

// A bare command name is found on the target's PATH (never the host's),
// and a command's exit status stays readable through the error.
func TestHostRunLooksUpTargetPathAndKeepsExitCode(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "running a command in another root needs chroot, so root")
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		testenv.Skip(t, "needs /bin/busybox (busybox-static) for a shell inside the test root")
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "usr/bin"), 0o755)
	b, _ := os.ReadFile("/bin/busybox")
	os.WriteFile(filepath.Join(dir, "usr/bin/busybox"), b, 0o755)
	os.Symlink("busybox", filepath.Join(dir, "usr/bin/sh"))
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if p, ok := LookPath(root, "sh"); !ok || p != "/usr/bin/sh" {
		t.Fatalf("LookPath(sh) = %q, %v", p, ok)
	}
	h := &HostSystem{Root: root}
	err = h.Run(t.Context(), Command{Argv: []string{"sh", "-c", "exit 3"}})
	var exit interface{ ExitCode() int }
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("Run = %v; want an error carrying exit code 3", err)
	}
	if err := h.Run(t.Context(), Command{Argv: []string{"no-such-tool"}}); !errors.Is(err, ErrSkipped) {
		t.Errorf("a command the target lacks: %v, want a skip", err)
	}
}
