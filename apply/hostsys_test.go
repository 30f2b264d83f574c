package apply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/seedinit/seedinit/apply/target"
)

// BeforeCommands runs once, before the first command starts, and not for
// a command that cannot start: PID 1 loads the filesystems' modules there
// only when a command needs them.
func TestBeforeCommandsOnce(t *testing.T) {
	root, err := target.Open("/")
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
