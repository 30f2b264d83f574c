package boot

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/testenv"
)

// The final stage waits, without a deadline of its own, until the real
// init has mounted what PID 1 released, and says what it waits for.
func TestWaitForRealInitWaitsForMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "needs root to mount a tmpfs")
	}
	pid1Exe = "/proc/self/exe" // PID 1 is still seedinit, at first
	t.Cleanup(func() { pid1Exe = "/proc/1/exe" })
	root := t.TempDir()
	for _, d := range []string{"var", "home"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var said []string
	note := func(r string) { mu.Lock(); said = append(said, r); mu.Unlock() }

	if r := notReadyReason(root, nil); r != "PID 1 is still seedinit" {
		t.Fatalf("before the exec: %q", r)
	}
	pid1Exe = "/proc/self/fd/0" // anything but this program: the real init
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if WaitForRealInit(ctx, root, []string{"/var", "/home"}, note) {
		t.Fatal("ready with /var and /home unmounted")
	}
	if len(said) != 1 || said[0] != "/var, /home not mounted yet" {
		t.Fatalf("said %q", said)
	}

	mount := func(d string) {
		if err := unix.Mount("tmpfs", filepath.Join(root, d), "tmpfs", 0, ""); err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(func() { unix.Unmount(filepath.Join(root, d), unix.MNT_DETACH) })
	}
	mount("var")
	// /home is mounted once the wait has said it waits for /home alone:
	// the event, not a guess at how long that takes.
	waitingForHome := make(chan struct{})
	var once sync.Once
	noteHome := func(r string) {
		note(r)
		if r == "/home not mounted yet" {
			once.Do(func() { close(waitingForHome) })
		}
	}
	done := make(chan bool)
	go func() { done <- WaitForRealInit(context.Background(), root, []string{"/var", "/home"}, noteHome) }()
	select {
	case <-waitingForHome:
	case ok := <-done:
		t.Fatalf("the wait ended (%v) with /home not mounted", ok)
	}
	mount("home")
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("not ready once both were mounted")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting after both were mounted")
	}
	mu.Lock()
	defer mu.Unlock()
	if said[len(said)-1] != "/home not mounted yet" {
		t.Errorf("last said %q, want /home's wait", said[len(said)-1])
	}

	// A read-only root is waited for too.
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(root, unix.MNT_DETACH)
	if r := notReadyReason(root, nil); r != "the root is read-only" {
		t.Errorf("read-only root: %q", r)
	}
}
