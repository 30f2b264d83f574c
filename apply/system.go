package apply

import (
	"context"
	"io"
	"time"
)

// Command is a program to run inside the target: argv[0] is a path inside
// the target root, and the process is chrooted there when the target is not
// the running system's "/".
type Command struct {
	Argv []string
	// Env is added to a minimal environment (PATH, HOME, LANG=C).
	Env []string
	Dir string
	// Output receives stdout and stderr; nil discards them.
	Output io.Writer
}

// System is every side effect that is not a file in the target: the kernel
// hostname, processes. Tests replace it with a fake that records.
type System interface {
	// Live reports whether the target is the running system, so that the
	// kernel's state (hostname, network) is seedinit's to change.
	Live() bool
	SetHostname(name string) error
	// Run runs cmd in the target and waits. It returns ErrSkipped (wrapped)
	// when the target cannot run cmd yet (not root, no such program, no
	// interpreter for its #! line or loader for its ELF), so that the
	// module is retried rather than failed.
	Run(ctx context.Context, cmd Command) error
}

// PowerRequest is a power_state change, as cloud-init's power_state
// describes it.
type PowerRequest struct {
	Mode string // "halt", "poweroff" or "reboot"
	// Delay is shutdown's delay: 0 for "now", else whole minutes.
	Delay   time.Duration
	Message string
	// Timeout is cloud-init's wait for its own process to end before
	// acting anyway; seedinit acts only after its stages have returned,
	// so there is nothing left to wait for and it is kept for the record.
	Timeout time.Duration
	// Command is the shutdown command cloud-init would run in the target
	// (shutdown -r +5 "msg"), for a System that prefers the target's tool.
	Command []string
}

// PowerScheduler is the capability to change the machine's power state
// once seedinit's final stage is over. The module decides whether and how
// (mode, delay, condition); the System does it, never the module.
type PowerScheduler interface {
	SchedulePowerState(ctx context.Context, req PowerRequest) error
}
