package boot

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/testenv"
)

// The child starts at the nice value asked for, and the forking thread
// keeps its own; RestorePriority takes every thread back to nice 0.
func TestStartNicedAndRestore(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "taking a thread back to nice 0 needs root (CAP_SYS_NICE)")
	}
	cmd := exec.Command("/bin/sh", "-c", "cat /proc/self/stat")
	var out strings.Builder
	cmd.Stdout = &out
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := getNice(unix.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	if err := startNiced(cmd, backgroundNice); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	// /proc/PID/stat: the 19th field is the nice value; the name in
	// parentheses comes before the fields counted here.
	fields := strings.Fields(out.String()[strings.LastIndexByte(out.String(), ')')+2:])
	if got, _ := strconv.Atoi(fields[16]); got != backgroundNice {
		t.Errorf("child's nice %d, want %d", got, backgroundNice)
	}
	if after, _ := getNice(unix.Gettid()); after != before {
		t.Errorf("the forking thread's nice is %d after the start, was %d", after, before)
	}

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 7))
	RestorePriority()
	if n, _ := getNice(unix.Gettid()); n != 0 {
		t.Errorf("nice %d after RestorePriority, want 0", n)
	}
}
