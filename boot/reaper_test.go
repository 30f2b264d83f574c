package boot

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/testenv"
)

// The reaper must reap orphans but leave the children seedinit waits for
// to their own Wait, which must see the real exit status.
func TestReaperLeavesTrackedChildren(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		testenv.Skip(t, "needs sh")
	}
	r := NewReaper()
	go r.Run()
	defer r.Stop()

	// An untracked child: exits at once and must not stay a zombie.
	orphan := exec.Command("sh", "-c", "exit 0")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	opid := orphan.Process.Pid

	for i := 0; i < 20; i++ {
		cmd := exec.Command("sh", "-c", "exit 3")
		if err := r.Start(cmd); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		r.Done(cmd)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
			t.Fatalf("run %d: Wait = %v, want exit status 3 (the reaper stole it?)", i, err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := unix.Kill(opid, 0); err == unix.ESRCH {
			return
		}
		r.reapAll()
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("orphan %d still exists (zombie not reaped); /proc says: %s", opid, procState(opid))
}

func procState(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return string(b)
}
