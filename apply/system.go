package apply

import (
	"context"
	"io"
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
	// Run runs cmd in the target and waits. It returns ErrCannotRun (wrapped)
	// when commands cannot be run in this target at all (not root, no shell).
	Run(ctx context.Context, cmd Command) error
}
