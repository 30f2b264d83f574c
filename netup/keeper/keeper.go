// Package keeper is the lease keeper after the handoff: the process
// (`seedinit dhcp keep`) that PID 1 starts before it execs the real init,
// on a root with no DHCP client of its own. It renews the leases PID 1
// wrote down (netup/dhcp.Keep), configures the NICs of the network config
// that come after the boot (netup/live.Hotplug) and keeps their leases
// too, and releases them all at the shutdown's SIGTERM.
//
// Started from the initramfs's copy of seedinit, which the switch to the
// root deleted, it would pin that copy's pages in memory for as long as
// the machine runs; so once the copy the final stage keeps in the root is
// there and is this very build, the keeper hands over to it: it finishes
// the NIC being configured (bounded), stops without releasing anything,
// and execs the root's copy with the same arguments, which starts again
// from the two files, the state (the leases) and the network config (the
// NICs still to come). If that exec fails, it starts over from the files
// as it is.
//
// It may import netup/dhcp, netup/live, netup/model and internal/; the
// command line is cmd's, what PID 1 hands it is boot's.
package keeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	rtdebug "runtime/debug"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/atomicfile"
	"github.com/seedinit/seedinit/internal/safego"
	"github.com/seedinit/seedinit/internal/samefile"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/live"
	"github.com/seedinit/seedinit/netup/model"
)

// Options say what the keeper keeps and where it may move. State is
// required; the fields after Log are seams for tests, the real thing when
// zero.
type Options struct {
	// State is the leases to keep, as PID 1 wrote them (dhcp.KeepState);
	// it is rewritten as they change.
	State string
	// Network, when set, is the live network config (JSON, as PID 1 wrote
	// it) of the NICs still to come: each is configured when it appears,
	// its lease kept, and it leaves the file once the state holds it.
	Network string
	// MoveTo, when set, is the copy of seedinit in the root: once it is
	// this build, the keeper goes on from it, if it runs from a deleted
	// file (the initramfs's).
	MoveTo string
	// Debug is passed on to the copy the keeper moves to; the logger's
	// level is the caller's.
	Debug bool
	Log   *slog.Logger

	// Exec replaces this process with path (argv[0] included); it returns
	// only when it failed. A test's may return nil: Run then returns nil,
	// as if the process had gone on as path. unix.Exec with this
	// environment when nil.
	Exec func(path string, argv []string) error
	// IsSelf says whether path is this very program; samefile.IsSelf
	// (every byte: it is about to run in this one's place) when nil.
	IsSelf func(path string) (bool, error)
	// RunningFromDeletedFile says whether this program's file is gone;
	// when nil, whether /proc/self/exe has no link left.
	RunningFromDeletedFile func() bool
	// MovePoll is how often MoveTo is looked at (5 s), MoveWait for how
	// long (10 minutes), HandoverWait how long the hotplug watch gets to
	// end at the handover (30 s).
	MovePoll, MoveWait, HandoverWait time.Duration
	// Keep keeps the leases (dhcp.Keep), Hotplug configures the NICs that
	// come later (live.Hotplug).
	Keep    func(context.Context, *dhcp.KeepState, dhcp.KeepOptions) error
	Hotplug func(context.Context, *model.Network, live.Options, func(*model.Interface, *live.Result, error)) error
}

func (o Options) withDefaults() Options {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Exec == nil {
		o.Exec = func(path string, argv []string) error { return unix.Exec(path, argv, os.Environ()) }
	}
	if o.IsSelf == nil {
		o.IsSelf = samefile.IsSelf
	}
	if o.RunningFromDeletedFile == nil {
		o.RunningFromDeletedFile = runningFromDeletedFile
	}
	if o.MovePoll <= 0 {
		o.MovePoll = 5 * time.Second
	}
	if o.MoveWait <= 0 {
		o.MoveWait = 10 * time.Minute
	}
	if o.HandoverWait <= 0 {
		// A NIC's exchange ends with its context, at once.
		o.HandoverWait = 30 * time.Second
	}
	if o.Keep == nil {
		o.Keep = dhcp.Keep
	}
	if o.Hotplug == nil {
		o.Hotplug = live.Hotplug
	}
	return o
}

// Args are the arguments of `seedinit dhcp keep` (after the program's
// name) that start this keeper again from its files: the state, the
// network config and --debug, without --move-to, which the copy it moves
// to has no need of. cmd's flags read them back (a test there checks).
func (o Options) Args() []string {
	args := []string{"dhcp", "keep", "--state", o.State}
	if o.Network != "" {
		args = append(args, "--network", o.Network)
	}
	if o.Debug {
		args = append(args, "--debug")
	}
	return args
}

// Run keeps the leases until ctx ends or the shutdown's SIGTERM (or ^C by
// hand) comes, then releases them. When it moves to the root's copy, the
// exec does not return; when the exec fails, the keeper starts over from
// the state and network files as it is, without moving again. The errors
// are those of reading the files and of dhcp.Keep.
func Run(ctx context.Context, o Options) error {
	o = o.withDefaults()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	for {
		handedOver, err := keepUntilHandover(ctx, o)
		if err != nil || !handedOver {
			return err
		}
		argv := append([]string{o.MoveTo}, o.Args()...)
		o.Log.Info("going on from the copy in the root", "path", o.MoveTo)
		err = o.Exec(o.MoveTo, argv)
		if err == nil {
			return nil // a test's Exec: as if this process were gone
		}
		// Nothing was released: start over from the state file as we are.
		o.Log.Error("go on from the copy in the root; staying", "path", o.MoveTo, "error", err.Error())
		o.MoveTo = ""
	}
}

// keepUntilHandover keeps the leases of the state file and the NICs of
// the network file until ctx ends (the leases released) or the keeper
// hands over (nothing released: handedOver).
func keepUntilHandover(ctx context.Context, o Options) (handedOver bool, err error) {
	st, err := dhcp.ReadKeepState(o.State)
	if err != nil {
		return false, err
	}
	ctx, handover := context.WithCancelCause(ctx)
	defer handover(nil)
	// It lives as long as the machine: after each exchange the heap it
	// used goes back to the kernel rather than waiting for the scavenger.
	kopts := dhcp.KeepOptions{StateFile: o.State, Log: o.Log, DHCP: dhcp.Options{Log: o.Log}, Settled: rtdebug.FreeOSMemory}
	// The NICs of the network config that come later: hotplugCtx ends
	// first at the handover, and the keeper goes on until the hotplug
	// watch has ended.
	hotplugCtx, stopHotplug := context.WithCancel(ctx)
	defer stopHotplug()
	hotplugDone := make(chan struct{})
	keeperDone := make(chan struct{})
	if o.Network != "" {
		n, err := ReadNetwork(o.Network)
		if err != nil {
			return false, err
		}
		more := make(chan dhcp.KeepMore)
		kopts.More = more
		safego.Go("watch for the network config's NICs", func() {
			defer close(hotplugDone)
			defer close(more)
			configureLateNICs(hotplugCtx, o, n, more, keeperDone)
		}, func(err error) { o.Log.Error("watch for the network config's NICs", "error", err.Error()) })
	} else {
		close(hotplugDone)
	}
	if o.MoveTo != "" && o.RunningFromDeletedFile() {
		safego.Go("wait for the root's copy", func() {
			if !waitForSameBuild(ctx, o) {
				return
			}
			// Nothing half done crosses the exec: the NIC being configured
			// is finished, its lease in the state file, or still in the
			// network file for the next keeper; then the keeper stops.
			stopHotplug()
			t := time.NewTimer(o.HandoverWait)
			defer t.Stop()
			select {
			case <-hotplugDone:
			case <-t.C:
				o.Log.Warn("the hotplug watch did not end in time; handing over anyway", "after", o.HandoverWait)
			}
			handover(dhcp.ErrKeepHandover)
		}, func(err error) { o.Log.Error("wait for the root's copy", "error", err.Error()) })
	}
	err = o.Keep(ctx, st, kopts)
	close(keeperDone)
	if err != nil {
		return false, err
	}
	return errors.Is(context.Cause(ctx), dhcp.ErrKeepHandover), nil
}

// configureLateNICs configures the NICs of n as they come (live.Hotplug)
// and hands their leases to the keeper. A NIC leaves the network file
// only once the keeper's state file holds its lease (or, with no lease
// yet, its wish for one): a keeper started again from the two files
// after a handover finds each NIC in one of them. One whose configuring
// the handover or the shutdown cut short stays in the network file, for
// the next keeper to configure again (Apply converges).
func configureLateNICs(ctx context.Context, o Options, n *model.Network, more chan<- dhcp.KeepMore, keeperDone <-chan struct{}) {
	log := o.Log
	err := o.Hotplug(ctx, n, live.Options{Log: log, DHCP: dhcp.Options{Log: log}}, func(iface *model.Interface, res *live.Result, err error) {
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
		if werr := WriteNetwork(o.Network, n); werr != nil {
			log.Warn("note the NIC as configured", "file", o.Network, "error", werr.Error())
		}
		rtdebug.FreeOSMemory()
	})
	if err != nil {
		log.Warn("stopped waiting for the network config's NICs", "error", err.Error())
	}
}

// ReadNetwork reads the network file as PID 1 (or the keeper) wrote it.
func ReadNetwork(path string) (*model.Network, error) {
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

// WriteNetwork rewrites the network file with what is still to come.
func WriteNetwork(path string, n *model.Network) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// runningFromDeletedFile says whether this program's file is gone (the
// initramfs emptied by the switch), which pins its pages in memory.
func runningFromDeletedFile() bool {
	var st unix.Stat_t
	return unix.Stat(samefile.SelfExe, &st) == nil && st.Nlink == 0
}

// waitForSameBuild waits, for at most o.MoveWait, until o.MoveTo is this
// very program (the final stage copies it there once the root is
// writable).
func waitForSameBuild(ctx context.Context, o Options) bool {
	deadline := time.Now().Add(o.MoveWait)
	for time.Now().Before(deadline) {
		if same, err := o.IsSelf(o.MoveTo); err == nil && same {
			return true
		}
		t := time.NewTimer(o.MovePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	o.Log.Warn("the copy in the root did not appear in time; staying on the initramfs's copy", "path", o.MoveTo, "within", o.MoveWait)
	return false
}
