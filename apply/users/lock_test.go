package users

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestLockWaitsForAnotherHolder holds /etc/.pwd.lock from another process
// (as lckpwdf would) and checks that Lock waits until it is released.
func TestLockWaitsForAnotherHolder(t *testing.T) {
	python := pythonWith(t, "fcntl")
	dir := debianRoot(t)
	root := openRoot(t, dir)
	holder := exec.Command(python, "-c", `
import fcntl, sys, time
f = open(sys.argv[1], "w")
fcntl.lockf(f, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()
`, filepath.Join(dir, "etc/.pwd.lock"))
	release, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("lock holder: %q %v", line, err)
	}
	done := make(chan error, 1)
	go func() {
		unlock, err := Lock(context.Background(), root)
		if err == nil {
			unlock()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Lock returned (%v) while another process held the lock", err)
	case <-time.After(200 * time.Millisecond):
		// Not proof, but a correct Lock can never fail this way.
	}
	release.Close()
	if err := holder.Wait(); err != nil {
		t.Fatalf("lock holder: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Lock after release: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	unlock, err := Lock(ctx, root)
	if err != nil {
		t.Fatalf("Lock of a free lock with a cancelled context: %v", err)
	}
	unlock()
}
