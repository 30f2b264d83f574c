package boot

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// backgroundNice is the priority of PID 1's child that outlives the
// handoff while it starts and keeps seedinit in the root: on a machine
// with one CPU its Go start and the 12 MB copy would otherwise take the
// CPU from the real init's first steps, which the boot is waiting for.
const backgroundNice = 19

// startNiced starts cmd at the given nice value. Linux keeps a nice value
// per thread and a new process inherits its forking thread's: this
// goroutine's thread is set for the fork and set back after it.
func startNiced(cmd *exec.Cmd, nice int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	old, err := getNice(tid)
	if err == nil {
		err = unix.Setpriority(unix.PRIO_PROCESS, tid, nice)
	}
	startErr := cmd.Start()
	if err == nil {
		unix.Setpriority(unix.PRIO_PROCESS, tid, old)
	}
	return startErr
}

// getNice is the nice value of thread tid: the raw getpriority(2)
// returns 20 minus it.
func getNice(tid int) (int, error) {
	p, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		return 0, err
	}
	return 20 - p, nil
}

// RestorePriority gives every thread of this process the normal priority
// back (nice 0): the child PID 1 started in the background does, before
// the final stage runs the user's modules and scripts, which cloud-init
// runs at the normal priority. Threads made later inherit it. Run twice:
// a thread made during the first pass by one not yet set is set by the
// second.
func RestorePriority() {
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return
		}
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				unix.Setpriority(unix.PRIO_PROCESS, tid, 0)
			}
		}
	}
}
