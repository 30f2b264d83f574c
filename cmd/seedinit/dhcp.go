package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	rtdebug "runtime/debug"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/boot"
	"github.com/seedinit/seedinit/internal/samefile"
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
	// It lives as long as the machine: after each exchange the heap it
	// used goes back to the kernel rather than waiting for the scavenger.
	opts := dhcp.KeepOptions{StateFile: *state, Log: log, DHCP: dhcp.Options{Log: log}, Settled: rtdebug.FreeOSMemory}
	// The NICs of the network config that come later: hotplugCtx ends
	// first at the handover, and the keeper goes on until the hotplug
	// watch has ended.
	hotplugCtx, stopHotplug := context.WithCancel(ctx)
	defer stopHotplug()
	hotplugDone := make(chan struct{})
	keeperDone := make(chan struct{})
	if *network != "" {
		n, err := readNetwork(*network)
		if err != nil {
			return fail(stderr, "dhcp keep: %v", err)
		}
		more := make(chan dhcp.KeepMore)
		opts.More = more
		go func() {
			defer close(hotplugDone)
			defer close(more)
			configureLateNICs(hotplugCtx, n, *network, more, keeperDone, log)
		}()
	} else {
		close(hotplugDone)
	}
	if *moveTo != "" && runningFromDeletedFile() {
		go func() {
			if !waitForSameBuild(ctx, *moveTo) {
				return
			}
			// Nothing half done crosses the exec: the NIC being configured
			// is finished, its lease in the state file, or still in the
			// network file for the next keeper; then the keeper stops.
			stopHotplug()
			select {
			case <-hotplugDone:
			case <-time.After(handoverWait):
				log.Warn("the hotplug watch did not end in time; handing over anyway", "after", handoverWait)
			}
			handover(dhcp.ErrKeepHandover)
		}()
	}
	err = dhcp.Keep(ctx, st, opts)
	close(keeperDone)
	if err != nil {
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

// handoverWait bounds the wait for the hotplug watch at the handover: a
// NIC's exchange ends with its context, at once.
const handoverWait = 30 * time.Second

// configureLateNICs configures the NICs of n as they come (live.Hotplug)
// and hands their leases to the keeper. A NIC leaves the network file
// only once the keeper's state file holds its lease (or, with no lease
// yet, its wish for one): a keeper started again from the two files
// after a handover finds each NIC in one of them. One whose configuring
// the handover or the shutdown cut short stays in the network file, for
// the next keeper to configure again (Apply converges).
func configureLateNICs(ctx context.Context, n *model.Network, network string, more chan<- dhcp.KeepMore, keeperDone <-chan struct{}, log *slog.Logger) {
	err := live.Hotplug(ctx, n, live.Options{Log: log, DHCP: dhcp.Options{Log: log}}, func(iface *model.Interface, res *live.Result, err error) {
		if err != nil && ctx.Err() != nil {
			log.Info("configuring a NIC was cut short; the next keeper configures it", "interface", iface.Name, "error", err.Error())
			return
		}
		if err != nil {
			log.Warn("configure a NIC that came later", "error", err.Error())
		}
		st := &dhcp.KeepState{}
		if res != nil {
			for _, r := range res.Renamed {
				log.Info("renamed network device", "mac", r.MAC, "from", r.From, "to", r.To)
			}
			st = dhcp.NewKeepState(res.Leases, res.Leases6)
			for _, name := range res.DHCP {
				if !slices.ContainsFunc(res.Leases, func(l *dhcp.Lease) bool { return l.Interface == name }) {
					st.Want(name, 4) // no lease yet: the keeper asks on
				}
			}
		}
		if len(st.Leases) > 0 {
			kept := make(chan struct{})
			select {
			case more <- dhcp.KeepMore{State: st, Kept: kept}:
			case <-keeperDone:
				return
			}
			select {
			case <-kept:
			case <-keeperDone:
				return
			}
		}
		// A keeper started again (from the root's copy) must not
		// configure it again: its lease is in the state file.
		n.Interfaces = slices.DeleteFunc(n.Interfaces, func(i *model.Interface) bool { return i == iface })
		if werr := writeNetwork(network, n); werr != nil {
			log.Warn("note the NIC as configured", "file", network, "error", werr.Error())
		}
		rtdebug.FreeOSMemory()
	})
	if err != nil {
		log.Warn("stopped waiting for the network config's NICs", "error", err.Error())
	}
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
		if same, err := samefile.IsSelf(path); err == nil && same {
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
