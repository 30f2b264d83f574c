package boot

import (
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// ReleaseControllingTerminal lets go of this process's controlling
// terminal when the process leads the terminal's session, as u-root's
// init starts its uinit (a new session, the console as its terminal).
// When such a leader exits, the kernel hangs the console up: every open
// descriptor of it reads end-of-file from then on, those of u-root's init
// among them, so the shell init starts next dies at once and init, out of
// commands, exits and panics the kernel. TIOCNOTTY gives the terminal
// back without the hang-up; it signals SIGHUP to the terminal's
// foreground group, which is this process's own, hence SIGHUP ignored
// first. Anything else (no terminal, not the leader) is left as it is.
func ReleaseControllingTerminal() {
	pid := unix.Getpid()
	if pid == 1 {
		return
	}
	if sid, err := unix.Getsid(0); err != nil || sid != pid {
		return
	}
	for fd := 0; fd <= 2; fd++ {
		// The descriptor whose terminal's session is ours is the
		// controlling terminal.
		if sid, err := unix.IoctlGetInt(fd, unix.TIOCGSID); err != nil || sid != pid {
			continue
		}
		signal.Ignore(syscall.SIGHUP)
		unix.IoctlSetInt(fd, unix.TIOCNOTTY, 0)
		return
	}
}
