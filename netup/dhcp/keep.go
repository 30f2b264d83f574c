package dhcp

// The lease keeper: on an image with no DHCP client of its own, the
// leases PID 1 took stay live after the handoff only if something renews
// them. Keep does, in a small process that PID 1 starts before it execs
// the real init (`seedinit dhcp keep`): it follows each lease's T1 (renew
// with its server), T2 (rebind with any server) and end (take the address
// off and ask again from scratch), applies a changed address with
// netlink, stands aside on a NIC that another DHCP client has taken, and
// releases what it holds when it is told to stop (the shutdown's SIGTERM).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/atomicfile"
	"github.com/seedinit/seedinit/internal/safego"
)

// bootTime is CLOCK_BOOTTIME: it goes on through a suspend, as a lease's
// time at the server does, and no one sets it, as NTP sets the wall clock
// once the network is up.
func bootTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// ErrKeepHandover, as the cause of Keep's context, stops the keeper
// without releasing anything: the state file says what it holds, for the
// same keeper started again from another copy of the program.
var ErrKeepHandover = errors.New("the lease keeper hands over to another copy of itself")

// KeepOptions tune Keep.
type KeepOptions struct {
	// StateFile is rewritten after every change, for a keeper started
	// again and for people (what is held, until when, who stood aside).
	StateFile string
	DHCP      Options
	Log       *slog.Logger
	// ProcDir is where other DHCP clients are looked for; "/proc" when
	// empty. SysClassNet names the machine's NICs; "/sys/class/net".
	ProcDir     string
	SysClassNet string
	// ClaimPoll is how often other clients are looked for; 5s when zero.
	ClaimPoll time.Duration
	// More brings leases taken after the start (a NIC that came later);
	// while it is open the keeper runs even with no lease.
	More <-chan KeepMore
	// Settled, when set, is called after each change to what is held (a
	// renewal, a new lease): the keeper's process returns the memory the
	// exchange used, as it then sleeps until the next one.
	Settled func()
	// ResolvConf is rewritten when a lease's DNS servers or search list
	// change, if it is still the one seedinit wrote from that NIC's lease
	// (PID 1 writes it on a root with no network service); a user's, or
	// one from the network config, stays. "/etc/resolv.conf" when empty.
	ResolvConf string
}

func (o KeepOptions) withDefaults() KeepOptions {
	o.DHCP = o.DHCP.withDefaults()
	if o.Log == nil {
		o.Log = o.DHCP.Log
	}
	if o.ProcDir == "" {
		o.ProcDir = "/proc"
	}
	if o.SysClassNet == "" {
		o.SysClassNet = "/sys/class/net"
	}
	if o.ClaimPoll <= 0 {
		o.ClaimPoll = 5 * time.Second
	}
	if o.ResolvConf == "" {
		o.ResolvConf = "/etc/resolv.conf"
	}
	return o
}

// KeepMore is a lease (or a NIC's wish for one) that came after the
// keeper started. Kept, when not nil, is closed once the state file
// holds it: only then may the sender forget the NIC, for a keeper started
// again from that file (the move to the root's copy) keeps what is there
// and nothing else.
type KeepMore struct {
	State *KeepState
	Kept  chan<- struct{}
}

// Keep holds the leases in st until ctx ends, then releases them (unless
// ctx's cause is ErrKeepHandover) and writes the state file a last time.
// Each lease is kept on its own; one that cannot be renewed is taken off
// its NIC at its end and asked for again, with growing waits, for as long
// as the keeper runs.
func Keep(ctx context.Context, st *KeepState, opts KeepOptions) error {
	opts = opts.withDefaults()
	slots, err := st.slots()
	if len(slots) == 0 && opts.More == nil {
		return errors.Join(errors.New("keep dhcp leases: none to keep"), err)
	}
	if err != nil {
		opts.Log.Warn("keep dhcp leases: some could not be read back", "file", opts.StateFile, "error", err.Error())
	}
	k := &keeper{opts: opts}
	var wg sync.WaitGroup
	// Each lease by its NIC and family: another client may take one
	// family of a NIC and leave the other to the keeper.
	cancels := map[claim][]context.CancelFunc{}
	start := func(slots []*slot) {
		k.mu.Lock()
		k.slots = append(k.slots, slots...)
		k.mu.Unlock()
		k.writeState()
		for _, s := range slots {
			lctx, cancel := context.WithCancel(ctx)
			c := claim{s.iface, s.family}
			cancels[c] = append(cancels[c], cancel)
			wg.Add(1)
			safego.Go("keep the lease on "+s.iface, func() {
				defer wg.Done()
				k.keep(lctx, s)
			}, func(err error) { opts.Log.Error("lease keeper", "interface", s.iface, "error", err.Error()) })
		}
	}
	start(slots)
	more := opts.More
	ticker := time.NewTicker(opts.ClaimPoll)
	defer ticker.Stop()
	for {
		for c, client := range claimedNICs(opts.ProcDir, opts.SysClassNet, nicsOf(cancels)) {
			if _, held := cancels[c]; !held {
				continue
			}
			for _, cancel := range cancels[c] {
				cancel()
			}
			delete(cancels, c)
			k.standAside(c, client)
		}
		if len(cancels) == 0 && more == nil {
			opts.Log.Info("no lease left to keep: the lease keeper ends")
			wg.Wait()
			k.writeState()
			return nil
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			if !errors.Is(context.Cause(ctx), ErrKeepHandover) {
				k.releaseAll()
			}
			k.writeState()
			return nil
		case m, ok := <-more:
			if !ok {
				more = nil
				continue
			}
			added, err := m.State.slots()
			if err != nil {
				opts.Log.Warn("keep dhcp leases: a new lease could not be read", "error", err.Error())
			}
			start(added) // the state file holds them when it returns
			if m.Kept != nil {
				close(m.Kept)
			}
		case <-ticker.C:
		}
	}
}

// nicsOf are the NICs of the leases in m, each once.
func nicsOf[V any](m map[claim]V) []string {
	var out []string
	for c := range m {
		if !slices.Contains(out, c.nic) {
			out = append(out, c.nic)
		}
	}
	return out
}

type keeper struct {
	opts  KeepOptions
	mu    sync.Mutex
	slots []*slot
	// writing orders the state file's writes: without it, a snapshot
	// taken before another goroutine's change could land after that
	// change's own write and leave the file stale for good.
	writing sync.Mutex
}

// slot is one lease the keeper holds on a NIC, for one family; lease is
// nil while it is lost (its end passed or the server refused it, and no
// new one yet).
type slot struct {
	iface      string
	family     int
	lease      keptLease
	state      string
	stoodAside string
}

// keep follows s's lease through its times until ctx ends.
func (k *keeper) keep(ctx context.Context, s *slot) {
	log := k.opts.Log
	failures := 0
	for ctx.Err() == nil {
		l := k.lease(s)
		if l == nil {
			k.setState(s, "asking for a new lease")
			nl, err := acquireKept(ctx, s.iface, s.family, k.opts.DHCP)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				// 2s, 4s, 8s... up to a minute: a server that NAKed may
				// first ping the address it offers next.
				wait := min(2*time.Second<<min(failures, 5), time.Minute)
				failures++
				log.Warn("dhcp: no new lease; asking again", "interface", s.iface, "in", wait, "error", err.Error())
				sleep(ctx, wait)
				continue
			}
			failures = 0
			if err := nl.apply(); err != nil {
				log.Warn("dhcp: apply the new lease", "interface", s.iface, "error", err.Error())
			}
			log.Info("dhcp: new lease", "interface", s.iface, "address", nl.address())
			k.refreshResolvConf(s.iface, nl)
			k.set(s, nl, "bound")
			continue
		}
		t := l.times()
		if t.infinite {
			k.setState(s, "bound, infinite lease")
			<-ctx.Done()
			return
		}
		now := bootTime()
		switch {
		case now < t.t1:
			k.setState(s, "bound")
			sleep(ctx, min(t.t1-now, 10*time.Minute))
		case now < t.end:
			rebind := now >= t.t2
			deadline, state := t.t2, "renewing"
			if rebind {
				deadline, state = t.end, "rebinding"
			}
			k.setState(s, state)
			nl, err := l.renew(ctx, k.opts.DHCP, rebind)
			switch {
			case err == nil:
				k.adopt(s, l, nl)
			case ctx.Err() != nil:
			case errors.Is(err, errRefused):
				log.Warn("dhcp: the server refused the lease; asking again", "interface", s.iface, "address", l.address(), "error", err.Error())
				k.drop(s, l, "refused")
			default:
				// RFC 2131 4.4.5: half the time left, at least a minute on a
				// real lease; a short one waits a sixteenth of itself.
				left := deadline - bootTime()
				wait := max(left/2, min(time.Minute, t.length/16), time.Second)
				log.Info("dhcp: no answer to the renewal; trying again", "interface", s.iface, "rebinding", rebind, "in", wait.Round(time.Second), "error", err.Error())
				sleep(ctx, min(wait, max(left, time.Second)))
			}
		default:
			log.Warn("dhcp: the lease ended without a renewal; taking it off", "interface", s.iface, "address", l.address())
			k.drop(s, l, "ended")
		}
	}
}

// adopt applies a renewed lease: the same address is applied again (its
// routes and MTU may have changed); a new one replaces the old.
func (k *keeper) adopt(s *slot, old, nl keptLease) {
	log := k.opts.Log
	if nl.address() != old.address() {
		log.Info("dhcp: the server gave another address", "interface", s.iface, "old", old.address(), "new", nl.address())
		if err := old.remove(); err != nil {
			log.Warn("dhcp: take the old address off", "interface", s.iface, "error", err.Error())
		}
	}
	if err := nl.apply(); err != nil {
		log.Warn("dhcp: apply the renewed lease", "interface", s.iface, "error", err.Error())
	}
	k.refreshResolvConf(s.iface, nl)
	log.Debug("dhcp: lease renewed", "interface", s.iface, "address", nl.address())
	k.set(s, nl, "bound")
}

// drop takes a lease that ended or was refused off its NIC.
func (k *keeper) drop(s *slot, l keptLease, why string) {
	if err := l.remove(); err != nil {
		k.opts.Log.Warn("dhcp: take the lost lease off", "interface", s.iface, "error", err.Error())
	}
	k.set(s, nil, "lost: "+why)
}

// releaseAll tells the servers the leases are no longer wanted and takes
// them off, as `dhclient -r` does at shutdown.
func (k *keeper) releaseAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, s := range k.slots {
		if s.lease == nil || s.stoodAside != "" {
			continue
		}
		if err := s.lease.release(); err != nil {
			k.opts.Log.Warn("dhcp: release", "interface", s.iface, "error", err.Error())
		}
		if err := s.lease.remove(); err != nil {
			k.opts.Log.Warn("dhcp: take the released lease off", "interface", s.iface, "error", err.Error())
		}
		k.opts.Log.Info("dhcp: lease released", "interface", s.iface, "address", s.lease.address())
		s.state = "released"
	}
}

func (k *keeper) standAside(c claim, client string) {
	k.mu.Lock()
	for _, s := range k.slots {
		if s.iface == c.nic && s.family == c.family {
			s.stoodAside = client
			s.state = "stood aside for " + client
		}
	}
	k.mu.Unlock()
	k.opts.Log.Info("dhcp: another DHCP client runs for this NIC and family; the lease keeper stands aside", "interface", c.nic, "family", c.family, "client", client)
	k.writeState()
}

func (k *keeper) lease(s *slot) keptLease {
	k.mu.Lock()
	defer k.mu.Unlock()
	return s.lease
}

func (k *keeper) set(s *slot, l keptLease, state string) {
	k.mu.Lock()
	s.lease = l
	if s.stoodAside == "" {
		// A renewal that ends after the keeper stood aside does not undo it.
		s.state = state
	}
	k.mu.Unlock()
	k.writeState()
	if k.opts.Settled != nil {
		k.opts.Settled()
	}
}

func (k *keeper) setState(s *slot, state string) {
	k.mu.Lock()
	changed := s.state != state && s.stoodAside == ""
	if changed {
		s.state = state
	}
	k.mu.Unlock()
	if changed {
		k.writeState()
	}
}

// writeState rewrites the state file atomically; the keeper goes on
// without it when it cannot.
func (k *keeper) writeState() {
	if k.opts.StateFile == "" {
		return
	}
	k.writing.Lock()
	defer k.writing.Unlock()
	k.mu.Lock()
	st := &KeepState{}
	for _, s := range k.slots {
		st.add(s)
	}
	k.mu.Unlock()
	if err := st.Write(k.opts.StateFile); err != nil {
		k.opts.Log.Warn("dhcp: write the lease keeper's state", "file", k.opts.StateFile, "error", err.Error())
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// refreshResolvConf rewrites resolv.conf for a lease whose DNS servers or
// search list are not the file's, when the file is one seedinit generated
// from a lease of the same NIC and family: its first line is the header
// the lease's own resolv.conf starts with.
func (k *keeper) refreshResolvConf(iface string, l keptLease) {
	want := l.ResolvConf()
	if want == nil {
		return
	}
	// A symlink (resolvconf or systemd-resolved installed since) is the
	// resolver's now: the rename would replace the link itself.
	if fi, err := os.Lstat(k.opts.ResolvConf); err != nil || !fi.Mode().IsRegular() {
		return
	}
	have, err := os.ReadFile(k.opts.ResolvConf)
	if err != nil || bytes.Equal(have, want) || !sameHeader(have, want) {
		return
	}
	if err := atomicfile.Write(k.opts.ResolvConf, want, 0o644); err != nil {
		k.opts.Log.Warn("dhcp: update resolv.conf from the lease", "interface", iface, "file", k.opts.ResolvConf, "error", err.Error())
		return
	}
	k.opts.Log.Info("dhcp: resolv.conf updated from the lease", "interface", iface, "file", k.opts.ResolvConf)
}

// sameHeader reports whether a and b start with the same first line.
func sameHeader(a, b []byte) bool {
	i := bytes.IndexByte(b, '\n')
	return i > 0 && bytes.HasPrefix(a, b[:i+1])
}

// KeepState is what the keeper holds, as JSON: PID 1 writes it for the
// keeper it starts, the keeper rewrites it as its leases change.
type KeepState struct {
	Leases []KeptLease `json:"leases"`
}

// KeptLease is one lease in the state file. The messages are the
// server's own (base64), from which the lease is read back and renewed;
// the rest is for people.
type KeptLease struct {
	Interface string `json:"interface"`
	// Family is 4 (Offer and ACK) or 6 (Reply).
	Family int    `json:"family"`
	Offer  []byte `json:"offer,omitempty"`
	ACK    []byte `json:"ack,omitempty"`
	Reply  []byte `json:"reply,omitempty"`
	// AcquiredBoot is when the lease was granted, on CLOCK_BOOTTIME.
	AcquiredBoot time.Duration `json:"acquired_boottime_ns"`
	Address      string        `json:"address,omitempty"`
	Server       string        `json:"server,omitempty"`
	// Renew, Rebind and End are the lease's times in seconds since boot
	// (CLOCK_BOOTTIME); 0 for an infinite lease.
	Renew  int64  `json:"renew_at_s,omitempty"`
	Rebind int64  `json:"rebind_at_s,omitempty"`
	End    int64  `json:"ends_at_s,omitempty"`
	State  string `json:"state,omitempty"`
}

// NewKeepState is the state for the given leases; leases not acquired
// here (read from elsewhere) and stateless DHCPv6 replies, which hold no
// address, are left out.
func NewKeepState(leases []*Lease, leases6 []*Lease6) *KeepState {
	st := &KeepState{}
	for _, l := range leases {
		if l != nil && l.raw != nil {
			st.add(&slot{iface: l.Interface, family: 4, lease: lease4{l}, state: "bound"})
		}
	}
	for _, l := range leases6 {
		if l != nil && l.Stateful && l.reply != nil && l.Address.IsValid() {
			st.add(&slot{iface: l.Interface, family: 6, lease: lease6{l}, state: "bound"})
		}
	}
	return st
}

// Want adds a NIC that runs DHCP of family (4 or 6) but has no lease
// yet: the keeper asks for one until it gets it.
func (st *KeepState) Want(iface string, family int) {
	st.add(&slot{iface: iface, family: family, state: "asking for a new lease"})
}

func (st *KeepState) add(s *slot) {
	kl := KeptLease{Interface: s.iface, Family: s.family, State: s.state}
	if s.lease != nil {
		kl = s.lease.kept()
		kl.State = s.state
		if t := s.lease.times(); !t.infinite {
			kl.Renew, kl.Rebind, kl.End = int64(t.t1/time.Second), int64(t.t2/time.Second), int64(t.end/time.Second)
		}
	}
	st.Leases = append(st.Leases, kl)
}

// Write writes st to path atomically, for root only: the messages name
// the machine and its server.
func (st *KeepState) Write(path string) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}

// ReadKeepState reads a state file written by Write.
func ReadKeepState(path string) (*KeepState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the lease keeper's state: %w", err)
	}
	var st KeepState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("read the lease keeper's state %s: %w", path, err)
	}
	return &st, nil
}

// slots reads the leases back from their messages; a lost one (no
// message) comes back without a lease, to be asked for again.
func (st *KeepState) slots() ([]*slot, error) {
	var out []*slot
	var errs []error
	for i, kl := range st.Leases {
		if kl.Interface == "" || (kl.Family != 4 && kl.Family != 6) {
			errs = append(errs, fmt.Errorf("lease %d: no interface or family", i))
			continue
		}
		s := &slot{iface: kl.Interface, family: kl.Family, state: kl.State}
		if strings.HasPrefix(kl.State, "stood aside") || kl.State == "released" {
			continue
		}
		l, err := readKept(kl)
		if err != nil {
			errs = append(errs, fmt.Errorf("lease %d on %s: %w", i, kl.Interface, err))
		}
		s.lease = l
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}
