package boot

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/internal/testenv"
)

// A copy alone (no final stage) is made once the root is ready, into
// the root it was given.
func TestAfterHandoffKeepOnlyCopiesIntoTheRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "the copy is made owned by root: needs root")
	}
	root := t.TempDir()
	a := AfterHandoff{Root: root, KeepOnly: true, Log: slog.New(slog.DiscardHandler)}
	if err := a.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(root, KeptBinary)); err != nil || fi.Size() == 0 {
		t.Fatalf("no copy in the root: %v", err)
	}
}

// A copy alone on a root that never gets ready gives up with an error
// that says so, and writes nothing.
func TestAfterHandoffKeepOnlyGivesUp(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := AfterHandoff{Root: root, Mounts: []string{"/var"}, KeepOnly: true, Log: slog.New(slog.DiscardHandler)}
	err := a.Wait(ctx)
	if err == nil || !strings.Contains(err.Error(), "seedinit not kept in the root "+root) || !strings.Contains(err.Error(), "/var not mounted yet") {
		t.Fatalf("Wait = %v, want the copy given up, naming the root and what it waited for", err)
	}
	if _, err := os.Stat(filepath.Join(root, KeptBinary)); err == nil {
		t.Fatal("a copy was made on a root that was not ready")
	}
}
