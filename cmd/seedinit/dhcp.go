package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	rtdebug "runtime/debug"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/boot"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/live"
	"github.com/seedinit/seedinit/netup/model"
)

func runDHCP(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "keep" {
		return fail(stderr, "dhcp: usage: seedinit dhcp keep --state FILE [--network FILE] [--move-to PATH]")
	}
	fs := flag.NewFlagSet("seedinit dhcp keep", flag.ContinueOnError)
	state := fs.String("state", boot.LeaseKeeperState, "the leases to keep, as PID 1 wrote them; rewritten as they change")
	network := fs.String("network", "", "the live network config (JSON, as PID 1 wrote it): its NICs that come later are renamed, configured and their leases kept")
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
	// It lives as long as the machine: after each exchange the heap it
	// used goes back to the kernel rather than waiting for the scavenger.
	opts := dhcp.KeepOptions{StateFile: *state, Log: log, DHCP: dhcp.Options{Log: log}, Settled: rtdebug.FreeOSMemory}
	if *network != "" {
		n, err := readNetwork(*network)
		if err != nil {
			return fail(stderr, "dhcp keep: %v", err)
		}
		more := make(chan *dhcp.KeepState, 4)
		opts.More = more
		go func() {
			defer close(more)
			err := live.Hotplug(ctx, n, live.Options{Log: log, DHCP: dhcp.Options{Log: log}}, func(iface *model.Interface, res *live.Result, err error) {
				// A keeper started again (from the root's copy) must not
				// configure it again: it holds its lease already.
				n.Interfaces = slices.DeleteFunc(n.Interfaces, func(i *model.Interface) bool { return i == iface })
				if werr := writeNetwork(*network, n); werr != nil {
					log.Warn("note the NIC as configured", "file", *network, "error", werr.Error())
				}
				if err != nil {
					log.Warn("configure a NIC that came later", "error", err.Error())
				}
				if res == nil {
					return
				}
				for _, r := range res.Renamed {
					log.Info("renamed network device", "mac", r.MAC, "from", r.From, "to", r.To)
				}
				if st := dhcp.NewKeepState(res.Leases, res.Leases6); len(st.Leases) > 0 {
					select {
					case more <- st:
					case <-ctx.Done():
					}
				}
				rtdebug.FreeOSMemory()
			})
			if err != nil {
				log.Warn("stopped waiting for the network config's NICs", "error", err.Error())
			}
		}()
	}
	if err := dhcp.Keep(ctx, st, opts); err != nil {
		return fail(stderr, "dhcp keep: %v", err)
	}
	if errors.Is(context.Cause(ctx), dhcp.ErrKeepHandover) {
		again := []string{"keep", "--state", *state}
		if *network != "" {
			again = append(again, "--network", *network)
		}
		if *debug {
			again = append(again, "--debug")
		}
		argv := append([]string{*moveTo, "dhcp"}, again...)
		log.Info("going on from the copy in the root", "path", *moveTo)
		err := unix.Exec(*moveTo, argv, os.Environ())
		// Nothing was released: start over from the state file as we are.
		log.Error("go on from the copy in the root; staying", "path", *moveTo, "error", err.Error())
		return runDHCP(again, stdout, stderr)
	}
	return exitOK
}

// readNetwork reads a network model as PID 1 wrote it.
func readNetwork(path string) (*model.Network, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var n model.Network
	if err := json.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &n, nil
}

// writeNetwork rewrites the network file with what is still to come.
func writeNetwork(path string, n *model.Network) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, b, 0o600)
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
