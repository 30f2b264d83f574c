package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// BeforeCommands runs once, before the first command starts, and not for
// a command that cannot start: PID 1 loads the filesystems' modules there
// only when a command needs them.
func TestBeforeCommandsOnce(t *testing.T) {
	root, err := rootfs.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	out := filepath.Join(t.TempDir(), "ran")
	calls := 0
	h := &HostSystem{Root: root, BeforeCommands: func() {
		calls++
		if _, err := os.Stat(out); err == nil {
			t.Error("BeforeCommands called after a command ran")
		}
	}}
	ctx := context.Background()
	if err := h.Run(ctx, Command{Argv: []string{"no-such-command-for-seedinit"}}); !errors.Is(err, ErrSkipped) {
		t.Fatalf("missing command: %v, want a skip", err)
	}
	if calls != 0 {
		t.Fatalf("BeforeCommands called %d times for a command that never started", calls)
	}
	for range 2 {
		if err := h.Run(ctx, Command{Argv: []string{"sh", "-c", "echo x >>" + out}}); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Errorf("BeforeCommands called %d times for two commands, want 1", calls)
	}
}

// A command that starts a daemon ("sleep 300 &") exits at once, but the
// daemon keeps the command's output open: waiting for the end of that
// output held `seedinit apply` (and PID 1's handoff) until the module's
// deadline. Run must come back with the command's own exit status and
// what it wrote, and say that a background process kept its output.
func TestRunDoesNotWaitForABackgroundChild(t *testing.T) {
	root, err := rootfs.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		exit int
	}{{"success", 0}, {"failure", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(dir, tc.name+".pid")
			t.Cleanup(func() { killPidFile(t, pidFile) })
			var out bytes.Buffer
			var logged bytes.Buffer
			h := &HostSystem{Root: root, Log: slog.New(slog.NewTextHandler(&logged, nil))}
			// The deadline is only there so that a Run that waits for the
			// daemon ends: what is checked is how it ended.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			script := fmt.Sprintf("sleep 300 & echo $! > %s; echo started; exit %d", pidFile, tc.exit)
			err := h.Run(ctx, Command{Argv: []string{"sh", "-c", script}, Output: &out})
			if ctx.Err() != nil {
				t.Fatalf("Run waited for the background sleep until the deadline: %v", err)
			}
			var ec interface{ ExitCode() int }
			switch {
			case tc.exit == 0 && err != nil:
				t.Errorf("Run: %v, want success (the command exited 0)", err)
			case tc.exit != 0 && (!errors.As(err, &ec) || ec.ExitCode() != tc.exit):
				t.Errorf("Run: %v, want exit status %d", err, tc.exit)
			}
			if !strings.HasPrefix(out.String(), "started\n") {
				t.Errorf("output %q, want what the command wrote", out.String())
			}
			if !strings.Contains(out.String(), "background process") || !strings.Contains(logged.String(), "background process") {
				t.Errorf("nothing says a background process kept the output open:\noutput: %q\nlog: %q", out.String(), logged.String())
			}
			// The daemon itself is left running: it is the user's.
			if b, err := os.ReadFile(pidFile); err != nil {
				t.Errorf("the command did not start its daemon: %v", err)
			} else if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid <= 0 || syscall.Kill(pid, 0) != nil {
				t.Errorf("the daemon (pid %q) did not outlive its command", b)
			}
		})
	}
}

// killPidFile ends the process whose pid a test's command wrote.
func killPidFile(t *testing.T, name string) {
	b, err := os.ReadFile(name)
	if err != nil {
		return
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
