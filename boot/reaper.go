package boot

import (
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Reaper reaps orphans that PID 1 inherits (a runcmd's "daemon &") without
// stealing the exit status of the children seedinit waits for itself: those
// are started through Start, which registers them under the same lock the
// reaper holds, and the reaper only peeks (WNOWAIT) before it reaps.
type Reaper struct {
	mu      sync.Mutex
	tracked map[int]bool
	stop    chan struct{}
	// sessions are the sessions of every command started through Start
	// (HostSystem starts each in a session of its own): the background
	// processes they leave stay in them unless they leave.
	sessions map[int]bool
}

// NewReaper returns a reaper; Run it in a goroutine.
func NewReaper() *Reaper {
	return &Reaper{tracked: map[int]bool{}, sessions: map[int]bool{}, stop: make(chan struct{})}
}

// Start starts cmd as a child the reaper leaves to cmd.Wait.
func (r *Reaper) Start(cmd *exec.Cmd) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	r.tracked[cmd.Process.Pid] = true
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setsid {
		r.sessions[cmd.Process.Pid] = true
	}
	return nil
}

// Sessions are the sessions of the commands started through Start.
func (r *Reaper) Sessions() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, 0, len(r.sessions))
	for s := range r.sessions {
		out = append(out, s)
	}
	return out
}

// Done forgets a child after its cmd.Wait returned.
func (r *Reaper) Done(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	r.mu.Lock()
	delete(r.tracked, cmd.Process.Pid)
	r.mu.Unlock()
}

// Run reaps on SIGCHLD and once a second (signals coalesce) until Stop.
func (r *Reaper) Run() {
	sig := make(chan os.Signal, 16)
	signal.Notify(sig, syscall.SIGCHLD)
	defer signal.Stop(sig)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		r.reapAll()
		select {
		case <-sig:
		case <-tick.C:
		case <-r.stop:
			return
		}
	}
}

// Stop ends Run.
func (r *Reaper) Stop() { close(r.stop) }

func (r *Reaper) reapAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err != nil {
			return
		}
		pid := int(siginfoPid(&info))
		if pid == 0 || r.tracked[pid] {
			// Nothing exited, or the first one is ours to leave to Wait.
			return
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err != nil {
			return
		}
	}
}
