package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/boot"
	"github.com/seedinit/seedinit/netup/dhcp"
)

func runDHCP(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "keep" {
		return fail(stderr, "dhcp: usage: seedinit dhcp keep --state FILE [--move-to PATH]")
	}
	fs := flag.NewFlagSet("seedinit dhcp keep", flag.ContinueOnError)
	state := fs.String("state", boot.LeaseKeeperState, "the leases to keep, as PID 1 wrote them; rewritten as they change")
	moveTo := fs.String("move-to", "", "once this copy of seedinit exists and is this build, go on from it (PID 1 passes the copy it keeps in the root)")
	debug := fs.Bool("debug", false, "log each renewal")
	if _, code, ok := parseFlags(fs, args[1:], stderr); !ok {
		return code
	}
	log := stderrLogger(*debug, stderr).With("component", "lease keeper")
	st, err := dhcp.ReadKeepState(*state)
	if err != nil {
		return fail(stderr, "dhcp keep: %v", err)
	}
	// The shutdown's SIGTERM (or ^C by hand) releases the leases.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, handover := context.WithCancelCause(ctx)
	defer handover(nil)
	if *moveTo != "" && runningFromDeletedFile() {
		go func() {
			if waitForSameBuild(ctx, *moveTo) {
				handover(dhcp.ErrKeepHandover)
			}
		}()
	}
	if err := dhcp.Keep(ctx, st, dhcp.KeepOptions{StateFile: *state, Log: log, DHCP: dhcp.Options{Log: log}}); err != nil {
		return fail(stderr, "dhcp keep: %v", err)
	}
	if errors.Is(context.Cause(ctx), dhcp.ErrKeepHandover) {
		argv := []string{*moveTo, "dhcp", "keep", "--state", *state}
		if *debug {
			argv = append(argv, "--debug")
		}
		log.Info("going on from the copy in the root", "path", *moveTo)
		err := unix.Exec(*moveTo, argv, os.Environ())
		// Nothing was released: start over from the state file as we are.
		log.Error("go on from the copy in the root; staying", "path", *moveTo, "error", err.Error())
		return runDHCP([]string{"keep", "--state", *state}, stdout, stderr)
	}
	return exitOK
}

// runningFromDeletedFile says whether this program's file is gone (the
// initramfs emptied by the switch), which pins its pages in memory.
func runningFromDeletedFile() bool {
	var st unix.Stat_t
	return unix.Stat("/proc/self/exe", &st) == nil && st.Nlink == 0
}

// waitForSameBuild waits, for at most 10 minutes, until path is this very
// program (the final stage copies it there once the root is writable).
func waitForSameBuild(ctx context.Context, path string) bool {
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		if same, err := boot.IsSelf(path); err == nil && same {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Second):
		}
	}
	fmt.Fprintf(os.Stderr, "seedinit: lease keeper: %s did not appear within 10 minutes; staying on the initramfs's copy\n", path)
	return false
}
