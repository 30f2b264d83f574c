package keeper

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/samefile"
	"github.com/seedinit/seedinit/internal/testenv"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/live"
	"github.com/seedinit/seedinit/netup/model"
)

// The tests here replace what the keeper drives (dhcp.Keep, live.Hotplug,
// the exec) with fakes that keep their contracts, so that the keeper's
// own part, when and how it hands over, is seen step by step without a
// network; keeper_netns_test.go runs the real ones against dnsmasq.

// fakeKeep is dhcp.Keep's contract without a network: it holds the
// leases of the state it is given, takes those that come on More (the
// state file holds them before Kept is closed), and when its context
// ends says whether it would have released them.
type fakeKeep struct {
	mu   sync.Mutex
	runs []*keepRun
	// gate, when set, holds each Kept until it is closed: the keeper is
	// slow to take a late NIC's lease.
	gate chan struct{}
	// onStart, when set, runs at the start of each run (its number).
	onStart func(run int, opts dhcp.KeepOptions)
}

type keepRun struct {
	started  []string // the NICs of the state it started from
	cause    error    // its context's cause when it ended
	released bool
	ended    time.Time
}

func nicsOf(st *dhcp.KeepState) []string {
	var out []string
	for _, l := range st.Leases {
		out = append(out, l.Interface)
	}
	return out
}

func (f *fakeKeep) keep(ctx context.Context, st *dhcp.KeepState, opts dhcp.KeepOptions) error {
	if len(st.Leases) == 0 && opts.More == nil {
		return errors.New("keep dhcp leases: none to keep")
	}
	f.mu.Lock()
	run := &keepRun{started: nicsOf(st)}
	f.runs = append(f.runs, run)
	n := len(f.runs)
	f.mu.Unlock()
	if f.onStart != nil {
		f.onStart(n, opts)
	}
	more := opts.More
	for {
		select {
		case <-ctx.Done():
			f.mu.Lock()
			run.cause = context.Cause(ctx)
			run.released = !errors.Is(run.cause, dhcp.ErrKeepHandover)
			run.ended = time.Now()
			f.mu.Unlock()
			return nil
		case m, ok := <-more:
			if !ok {
				more = nil
				continue
			}
			st.Leases = append(st.Leases, m.State.Leases...)
			if err := st.Write(opts.StateFile); err != nil {
				return err
			}
			if f.gate != nil {
				select {
				case <-f.gate:
				case <-ctx.Done():
					continue
				}
			}
			close(m.Kept)
		}
	}
}

func (f *fakeKeep) snapshot() []keepRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []keepRun
	for _, r := range f.runs {
		out = append(out, *r)
	}
	return out
}

// execs records the keeper's execs; fails makes the first ones fail.
type execs struct {
	mu    sync.Mutex
	calls [][]string
	fails int
	done  chan struct{} // closed at the first exec that succeeds
}

func newExecs(fails int) *execs { return &execs{fails: fails, done: make(chan struct{})} }

func (e *execs) exec(path string, argv []string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, append([]string{path}, argv...))
	if len(e.calls) <= e.fails {
		return errors.New("exec format error")
	}
	close(e.done)
	return nil
}

func (e *execs) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.calls)
}

// waitHotplug is live.Hotplug when no NIC comes: it returns when its
// context ends.
func waitHotplug(ctx context.Context, _ *model.Network, _ live.Options, _ func(*model.Interface, *live.Result, error)) error {
	<-ctx.Done()
	return nil
}

// files writes a state file holding eth0 and a network file naming one
// NIC still to come; it returns their paths.
func files(t *testing.T) (state, network string) {
	t.Helper()
	dir := t.TempDir()
	state, network = filepath.Join(dir, "dhcp-leases.json"), filepath.Join(dir, "network-live.json")
	st := &dhcp.KeepState{}
	st.Want("eth0", 4)
	if err := st.Write(state); err != nil {
		t.Fatal(err)
	}
	if err := WriteNetwork(network, &model.Network{Version: 2, Interfaces: []*model.Interface{dhcpNIC("late0", "52:54:00:00:0b:01")}}); err != nil {
		t.Fatal(err)
	}
	return state, network
}

func dhcpNIC(name, mac string) *model.Interface {
	return &model.Interface{Name: name, Type: model.TypePhysical, MACAddress: mac, Subnets: []model.Subnet{{Type: model.SubnetDHCP}}}
}

func testLog(t *testing.T) (*slog.Logger, *testenv.Buffer) {
	var buf testenv.Buffer
	t.Cleanup(func() { t.Logf("the keeper's log:\n%s", buf.String()) })
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

// run starts Run and returns what ends it and its result.
func run(t *testing.T, o Options) (stop context.CancelFunc, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		res <- Run(ctx, o)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return 10 s after its context ended")
		}
	})
	return cancel, res
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// receive waits for ch, for 10 s at the most: a broken keeper fails the
// test rather than hanging it.
func receive[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("after 10 s: %s", what)
	}
}

// result waits for Run's result, for 10 s at the most.
func result(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s")
		return nil
	}
}

// The keeper moves to the root's copy once that is this very program, and
// not before: not while it is missing, another program, or a copy of the
// same size one byte apart past the head that holds the build ID (a
// check of the build ID alone would take it). Then it stops without
// releasing anything and execs the copy with its own arguments.
func TestHandoverOnlyToTheSameBuild(t *testing.T) {
	state, network := files(t)
	moveTo := filepath.Join(t.TempDir(), "var/lib/seedinit/seedinit")
	self, err := os.ReadFile(samefile.SelfExe)
	if err != nil {
		t.Fatal(err)
	}
	if len(self) <= 64<<10 {
		t.Fatalf("this test binary is %d bytes, too small to differ past the head", len(self))
	}
	place := func(content []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(moveTo), 0o755); err != nil {
			t.Fatal(err)
		}
		// Whole or not at all, as the final stage writes it.
		if err := os.WriteFile(moveTo+".tmp", content, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(moveTo+".tmp", moveTo); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	looked := 0
	isSelf := func(path string) (bool, error) {
		same, err := samefile.IsSelf(path) // the real check
		mu.Lock()
		looked++
		mu.Unlock()
		return same, err
	}
	lookedTwiceMore := func() {
		t.Helper()
		mu.Lock()
		from := looked
		mu.Unlock()
		waitFor(t, "the keeper looked at the root's copy twice more", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return looked >= from+2
		})
	}
	keep, ex := &fakeKeep{}, newExecs(0)
	log, logBuf := testLog(t)
	_, done := run(t, Options{State: state, Network: network, MoveTo: moveTo, Debug: true, Log: log,
		Exec: ex.exec, IsSelf: isSelf, RunningFromDeletedFile: func() bool { return true },
		MovePoll: time.Millisecond, Keep: keep.keep, Hotplug: waitHotplug})

	oneByteApart := slices.Clone(self)
	oneByteApart[len(oneByteApart)-1] ^= 1
	for _, c := range []struct {
		name    string
		content []byte // nil: none
	}{
		{"missing", nil},
		{"another program", []byte("#!/bin/sh\nexec /sbin/dhclient\n")},
		{"the same size, one byte apart at its end", oneByteApart},
	} {
		if c.content != nil {
			place(c.content)
		}
		lookedTwiceMore()
		if n := ex.count(); n != 0 {
			t.Fatalf("the root's copy %s: the keeper moved to it (%d execs)", c.name, n)
		}
		if runs := keep.snapshot(); len(runs) != 1 || !runs[0].ended.IsZero() {
			t.Fatalf("the root's copy %s: the keeper stopped keeping: %+v", c.name, runs)
		}
	}

	place(self)
	receive(t, ex.done, "the root's copy is this program, but the keeper did not move to it")
	if err := result(t, done); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{moveTo, moveTo, "dhcp", "keep", "--state", state, "--network", network, "--debug"}
	if diff := cmp.Diff([][]string{want}, ex.calls); diff != "" {
		t.Errorf("the exec (path, then argv) (-want +got):\n%s", diff)
	}
	runs := keep.snapshot()
	if len(runs) != 1 || !errors.Is(runs[0].cause, dhcp.ErrKeepHandover) || runs[0].released {
		t.Errorf("the keeper before the exec: %+v; want one run, ended by the handover, nothing released", runs)
	}
	if !strings.Contains(logBuf.String(), "going on from the copy in the root") {
		t.Error("the move was not logged")
	}
}

// Without --network or --debug the exec passes neither: the arguments
// are the keeper's own, nothing more.
func TestHandoverArgumentsAreTheKeepersOwn(t *testing.T) {
	state, _ := files(t)
	moveTo := "/var/lib/seedinit/seedinit"
	keep, ex := &fakeKeep{}, newExecs(0)
	log, _ := testLog(t)
	run(t, Options{State: state, MoveTo: moveTo, Log: log, Exec: ex.exec,
		IsSelf: func(string) (bool, error) { return true, nil }, RunningFromDeletedFile: func() bool { return true },
		MovePoll: time.Millisecond, Keep: keep.keep, Hotplug: waitHotplug})
	receive(t, ex.done, "the keeper moved to the root's copy")
	want := []string{moveTo, moveTo, "dhcp", "keep", "--state", state}
	if diff := cmp.Diff([][]string{want}, ex.calls); diff != "" {
		t.Errorf("the exec (-want +got):\n%s", diff)
	}
}

// The handover waits for the hotplug watch to end (the NIC being
// configured is finished first) and only then stops the keeper.
func TestHandoverStopsTheHotplugWatchFirst(t *testing.T) {
	state, network := files(t)
	var hotplugEnded time.Time
	hotplug := func(ctx context.Context, _ *model.Network, _ live.Options, _ func(*model.Interface, *live.Result, error)) error {
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // finishing a NIC's exchange
		hotplugEnded = time.Now()
		return nil
	}
	keep, ex := &fakeKeep{}, newExecs(0)
	log, logBuf := testLog(t)
	run(t, Options{State: state, Network: network, MoveTo: "/var/lib/seedinit/seedinit", Log: log, Exec: ex.exec,
		IsSelf: func(string) (bool, error) { return true, nil }, RunningFromDeletedFile: func() bool { return true },
		MovePoll: time.Millisecond, Keep: keep.keep, Hotplug: hotplug})
	receive(t, ex.done, "the keeper moved to the root's copy")
	runs := keep.snapshot()
	if hotplugEnded.IsZero() || runs[0].ended.Before(hotplugEnded) {
		t.Errorf("the keeper stopped at %v, the hotplug watch ended at %v: the keeper must stop last", runs[0].ended, hotplugEnded)
	}
	if strings.Contains(logBuf.String(), "did not end in time") {
		t.Error("a hotplug watch that ended in time was logged as late")
	}
}

// A hotplug watch that does not end (a NIC's exchange stuck) does not
// hold the handover: after HandoverWait it is logged and the keeper moves
// anyway.
func TestHandoverIsBounded(t *testing.T) {
	state, network := files(t)
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	hotplug := func(context.Context, *model.Network, live.Options, func(*model.Interface, *live.Result, error)) error {
		<-stuck // deaf to its context
		return nil
	}
	keep, ex := &fakeKeep{}, newExecs(0)
	log, logBuf := testLog(t)
	run(t, Options{State: state, Network: network, MoveTo: "/var/lib/seedinit/seedinit", Log: log, Exec: ex.exec,
		IsSelf: func(string) (bool, error) { return true, nil }, RunningFromDeletedFile: func() bool { return true },
		MovePoll: time.Millisecond, HandoverWait: 20 * time.Millisecond, Keep: keep.keep, Hotplug: hotplug})
	receive(t, ex.done, "a hotplug watch that does not end held the handover")
	if !strings.Contains(logBuf.String(), "the hotplug watch did not end in time; handing over anyway") {
		t.Errorf("the late hotplug watch was not logged")
	}
	if runs := keep.snapshot(); runs[0].released {
		t.Error("the leases were released at the handover")
	}
}

// An exec that fails (the root's copy on a noexec mount, say) leaves the
// leases held: the keeper starts over from the state file as it was last
// written, on this copy, and does not try to move again; it still
// releases them at the shutdown.
func TestFailedExecStartsOverFromTheStateFile(t *testing.T) {
	state, _ := files(t)
	keep, ex := &fakeKeep{}, newExecs(1)
	// The first run takes a lease on eth1 (the state file is rewritten);
	// the second must start from that file.
	keep.onStart = func(run int, opts dhcp.KeepOptions) {
		if run == 1 {
			st := &dhcp.KeepState{}
			st.Want("eth0", 4)
			st.Want("eth1", 4)
			if err := st.Write(opts.StateFile); err != nil {
				t.Error(err)
			}
		}
	}
	var looked sync.Mutex
	looks := 0
	isSelf := func(string) (bool, error) {
		looked.Lock()
		defer looked.Unlock()
		looks++
		return true, nil
	}
	log, logBuf := testLog(t)
	stop, done := run(t, Options{State: state, MoveTo: "/var/lib/seedinit/seedinit", Log: log, Exec: ex.exec,
		IsSelf: isSelf, RunningFromDeletedFile: func() bool { return true },
		MovePoll: time.Millisecond, Keep: keep.keep, Hotplug: waitHotplug})
	waitFor(t, "the keeper started over", func() bool { return len(keep.snapshot()) == 2 })
	time.Sleep(20 * time.Millisecond) // twenty polls, were it looking
	stop()
	if err := result(t, done); err != nil {
		t.Fatalf("Run: %v", err)
	}
	runs := keep.snapshot()
	if !errors.Is(runs[0].cause, dhcp.ErrKeepHandover) || runs[0].released {
		t.Errorf("the first keeper: %+v; want it stopped by the handover, nothing released", runs[0])
	}
	if diff := cmp.Diff([]string{"eth0", "eth1"}, runs[1].started); diff != "" {
		t.Errorf("the keeper started over from (-the state file +got):\n%s", diff)
	}
	if !runs[1].released {
		t.Errorf("the second keeper did not release at the end: %+v", runs[1])
	}
	if n := ex.count(); n != 1 {
		t.Errorf("%d execs; want 1: after a failed one the keeper stays", n)
	}
	looked.Lock()
	defer looked.Unlock()
	if looks != 1 {
		t.Errorf("the root's copy was looked at %d times; want once, before the exec that failed", looks)
	}
	if !strings.Contains(logBuf.String(), "go on from the copy in the root; staying") {
		t.Error("the failed exec was not logged")
	}
}

// A keeper that does not run from a deleted file (the root's copy, or
// started by hand) stays where it is; one whose root's copy never comes
// says so once its wait is over, and goes on.
func TestNoMove(t *testing.T) {
	for _, c := range []struct {
		name    string
		deleted bool
		self    bool
		log     string
	}{
		{"not from a deleted file", false, true, ""},
		{"the root's copy never comes", true, false, "the copy in the root did not appear in time; staying on the initramfs's copy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			state, _ := files(t)
			keep, ex := &fakeKeep{}, newExecs(0)
			log, logBuf := testLog(t)
			stop, done := run(t, Options{State: state, MoveTo: "/var/lib/seedinit/seedinit", Log: log, Exec: ex.exec,
				IsSelf: func(string) (bool, error) { return c.self, nil }, RunningFromDeletedFile: func() bool { return c.deleted },
				MovePoll: time.Millisecond, MoveWait: 20 * time.Millisecond, Keep: keep.keep, Hotplug: waitHotplug})
			if c.log != "" {
				waitFor(t, "the end of the wait logged", func() bool { return strings.Contains(logBuf.String(), c.log) })
			} else {
				time.Sleep(30 * time.Millisecond)
			}
			stop()
			if err := result(t, done); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if n := ex.count(); n != 0 {
				t.Errorf("%d execs, want none", n)
			}
			if runs := keep.snapshot(); len(runs) != 1 || !runs[0].released {
				t.Errorf("runs %+v; want one, released at the end", runs)
			}
		})
	}
}

// configureLateNICs' contract: a NIC leaves the network file only once
// the keeper's state file holds its lease (or its wish for one), so a
// keeper started again from the two files finds it in one of them. One
// whose configuring the handover cut short stays for the next keeper.
func TestLateNICLeavesTheNetworkFileOnceKept(t *testing.T) {
	state, network := files(t)
	if err := WriteNetwork(network, &model.Network{Version: 2, Interfaces: []*model.Interface{
		dhcpNIC("late0", "52:54:00:00:0b:01"), dhcpNIC("late1", "52:54:00:00:0b:02"), dhcpNIC("late2", "52:54:00:00:0b:03"),
	}}); err != nil {
		t.Fatal(err)
	}
	inNetwork := func() []string {
		n, err := ReadNetwork(network)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, i := range n.Interfaces {
			out = append(out, i.Name)
		}
		return out
	}
	inState := func() []string {
		st, err := dhcp.ReadKeepState(state)
		if err != nil {
			t.Fatal(err)
		}
		return nicsOf(st)
	}
	step := make(chan string)
	applied := make(chan struct{})
	hotplug := func(ctx context.Context, n *model.Network, _ live.Options, done func(*model.Interface, *live.Result, error)) error {
		byName := map[string]*model.Interface{}
		for _, i := range n.Interfaces {
			byName[i.Name] = i
		}
		for {
			select {
			case <-ctx.Done():
				// late2 was being configured when the handover came.
				done(byName["late2"], nil, ctx.Err())
				close(applied)
				return nil
			case name := <-step:
				// late0 is leased; late1's exchange got no answer.
				var err error
				if name == "late1" {
					err = errors.New("dhcp on late1: no answer")
				}
				done(byName[name], &live.Result{DHCP: []string{name}}, err)
				applied <- struct{}{}
			}
		}
	}
	keep := &fakeKeep{gate: make(chan struct{})}
	moveNow := make(chan struct{})
	ex := newExecs(0)
	log, _ := testLog(t)
	run(t, Options{State: state, Network: network, MoveTo: "/var/lib/seedinit/seedinit", Log: log, Exec: ex.exec,
		IsSelf: func(string) (bool, error) {
			select {
			case <-moveNow:
				return true, nil
			default:
				return false, nil
			}
		},
		RunningFromDeletedFile: func() bool { return true }, MovePoll: time.Millisecond, Keep: keep.keep, Hotplug: hotplug})

	go func() { step <- "late0" }()
	waitFor(t, "the keeper's state file holds late0", func() bool { return slices.Contains(inState(), "late0") })
	// The keeper has not said it holds it (Kept): late0 stays.
	time.Sleep(20 * time.Millisecond)
	if got := inNetwork(); !slices.Contains(got, "late0") {
		t.Fatalf("late0 left the network file (%q) before the keeper took its lease", got)
	}
	close(keep.gate)
	receive(t, applied, "the hotplug watch applied the NIC")
	if got := inNetwork(); slices.Contains(got, "late0") {
		t.Errorf("late0 still in the network file (%q) once kept", got)
	}
	step <- "late1"
	receive(t, applied, "the hotplug watch applied the NIC")
	if got, st := inNetwork(), inState(); slices.Contains(got, "late1") || !slices.Contains(st, "late1") {
		t.Errorf("late1, which got no answer: network file %q, state file %q; want it in the state file only (the keeper asks on)", got, st)
	}
	close(moveNow)
	receive(t, applied, "the hotplug watch applied the NIC")
	receive(t, ex.done, "the keeper moved to the root's copy")
	if got := inNetwork(); !slices.Equal(got, []string{"late2"}) {
		t.Errorf("after the handover the network file names %q; want late2, whose configuring was cut short", got)
	}
	if got := inState(); slices.Contains(got, "late2") {
		t.Errorf("late2, cut short, is in the state file: %q", got)
	}
}
