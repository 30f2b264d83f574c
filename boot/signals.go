package boot

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/safego"
)

// handleSignals makes PID 1 answer the signals an init answers until the
// handoff (after the exec the real init's own handlers take over): SIGTERM
// and SIGINT (Ctrl-Alt-Del, once CAD is routed to PID 1) reboot, SIGUSR1
// halts and SIGUSR2 powers off, as busybox init and sysvinit do.
func handleSignals(log *slog.Logger) {
	// Ctrl-Alt-Del becomes SIGINT to PID 1 rather than an instant reboot.
	unix.Reboot(unix.LINUX_REBOOT_CMD_CAD_OFF)
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGUSR2)
	safego.Go("signal handler", func() {
		for sig := range ch {
			// One signal's panic must not leave the next unanswered.
			safego.Run("signal "+sig.String(), func() {
				cmd, what := rebootCommand(sig)
				log.Warn("signal received: shutting down", "signal", sig.String(), "action", what)
				syncBounded(rebootSyncWait)
				// Give the log a moment to reach the console.
				time.Sleep(100 * time.Millisecond)
				if err := unix.Reboot(cmd); err != nil {
					log.Error("shutdown", "action", what, "error", err.Error())
				}
			})
		}
	}, nil)
}

// rebootHalt is reboot(2)'s halt command, an unsigned int the kernel
// reads from its argument's low 32 bits: as an int it is negative on
// 32-bit machines, where the constant does not fit.
var rebootHalt uint32 = unix.LINUX_REBOOT_CMD_HALT

func rebootCommand(sig os.Signal) (int, string) {
	switch sig {
	case syscall.SIGUSR1:
		return int(rebootHalt), "halt"
	case syscall.SIGUSR2:
		return unix.LINUX_REBOOT_CMD_POWER_OFF, "poweroff"
	}
	return unix.LINUX_REBOOT_CMD_RESTART, "reboot"
}
