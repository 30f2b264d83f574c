package boot

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/model"
)

// The handoff is decided once, by planHandoff, from a handoffSnapshot:
// what PID 1 did (its options, what it mounted, the network it brought
// up) and what the machine looked like once it stopped loading modules
// (the mount table, the root's own network service, the links and their
// addresses). carryOutHandoff (handoff.go) then runs the plan's steps.
// planHandoff makes no system call, reads no file and logs nothing: a
// table of root shapes tests it (handoffplan_test.go).

// handoffSnapshot is what the handoff is decided from.
type handoffSnapshot struct {
	// PID 1's state.
	Initramfs   bool   // it switches from an initramfs to Target
	Target      string // the root it provisioned: /sysroot, or /
	Disabled    bool   // seedinit.disable
	ReadOnly    bool   // "ro" on the command line (the kernel's default)
	RemountedRW bool   // PID 1 made a read-only "/" writable
	DHCP        string // seedinit.dhcp=: DHCPKeep, DHCPOff or ""
	SeedSaved   bool   // the final stage has a seed to run from
	KeepsSelf   bool   // the child after the handoff keeps seedinit in the root
	Released    bool   // the target's mounts are released already (a kexec that failed)
	Reaping     bool   // PID 1's reaper runs

	// MountsBefore are the mounts there were before PID 1 mounted the
	// target's own filesystems (nil: it mounted none). Mounts is the
	// mount table at the handoff and TargetMount the id of the target's
	// mount in it, both read only when there is something to release;
	// MountsErr is why they could not be read.
	MountsBefore mountSnapshot
	Mounts       []mountEntry
	TargetMount  uint64
	MountsErr    error

	// The network PID 1 brought up: the live config and its leases, and
	// the datasource search's (ephemeral) leases.
	LiveNet     *model.Network
	Ephemeral   []*dhcp.Lease
	LiveLeases  []*dhcp.Lease
	LiveLeases6 []*dhcp.Lease6
	// Links are the links the live config and the leases name that are
	// there, each with its addresses (a name not in it: no such link).
	Links map[string][]netip.Addr
	// MissingNICs are the live config's NICs (by MAC) no link has yet.
	MissingNICs []*model.Interface
	MissingErr  error
	// OSNetwork is the root's own network service (detectOSNetwork),
	// HasOSNetwork false when it has none; OSNetworkErr is why the
	// target could not be looked at. Looked for only when PID 1 brought
	// a network up.
	OSNetwork    osNetwork
	HasOSNetwork bool
	OSNetworkErr error
}

// handoffPlan is the handoff decided: the steps to run, in order, and
// what each of them does.
type handoffPlan struct {
	Steps []handoffStep

	// KeepState: the random seed and the timeline go into the target.
	KeepState bool
	Network   networkPlan
	Keeper    keeperPlan
	FinalWait finalWaitPlan
	Mounts    mountPlan
	// ReadOnly is the root remounted read-only ("" none).
	ReadOnly     string
	AfterHandoff afterHandoffPlan
}

// handoffStep names a step of the handoff by the function that carries
// it out (handoffSteps in handoff.go).
type handoffStep string

const (
	stepKeepStateInTarget  handoffStep = "keepStateInTarget"
	stepHandNetworkToOS    handoffStep = "handNetworkToOS"
	stepNoteLeasesToKeep   handoffStep = "noteLeasesToKeep"
	stepNoteFinalStageWait handoffStep = "noteFinalStageWait"
	stepReleaseTarget      handoffStep = "releaseTarget"
	stepMakeAPIMountPoints handoffStep = "makeAPIMountPoints"
	stepRestoreReadOnly    handoffStep = "restoreReadOnly"
	stepRecordTimeline     handoffStep = "recordTimeline"
	stepSwitchRoot         handoffStep = "switchRoot"
	stepStartAfterHandoff  handoffStep = "startAfterHandoff"
	stepStartLeaseKeeper   handoffStep = "startLeaseKeeper"
	stepStopReaping        handoffStep = "stopReaping"
)

// networkPlan is what becomes of the network PID 1 brought up.
type networkPlan struct {
	// Stays: the root has no network service of its own, and the
	// network stays as PID 1 set it.
	Stays bool
	// Service is the root's own service that takes the network over,
	// ServiceDHCP whether it has a DHCPv4 client.
	Service     string
	ServiceDHCP bool
	// Hand are the live config's interfaces that service brings up
	// itself: PID 1 releases them (live.Release).
	Hand []string
	// TakeBack are the search's leases that service's DHCP client asks
	// for again: removed, but those on a NIC released with Hand.
	TakeBack []*dhcp.Lease
	// Err: the root could not be looked at; nothing is handed over.
	Err error
}

// keeperPlan is what the lease keeper keeps after the handoff.
type keeperPlan struct {
	// RootClient is the root's network service whose DHCP client renews
	// the leases itself: no keeper for them.
	RootClient string
	// Leases and Leases6 are the leases to keep: those still on their NIC
	// once the network is handed over.
	Leases  []*dhcp.Lease
	Leases6 []*dhcp.Lease6
	// LateNICs is the live config for its NICs that are not there yet,
	// on a root with no network service: the keeper configures each as
	// it comes. LateErr: the NICs could not be looked for.
	LateNICs *model.Network
	LateErr  error
	// MoveToKept: the keeper moves to the copy of seedinit kept in the
	// root (it runs from the initramfs's, which the switch deletes).
	MoveToKept bool
	// Start: the keeper starts (noteLeasesToKeep takes it back when it
	// could not write the keeper's state, or none of its leases is live
	// any more).
	Start bool
	// Err: the root could not be looked at; no keeper.
	Err error
}

// finalWaitPlan is what the final stage, after the handoff, waits for the
// real init and the root's network service to bring back.
type finalWaitPlan struct {
	// Mounts are the target's filesystems PID 1 releases, as "/var":
	// the real init mounts them again.
	Mounts []string
	// Network are the interfaces handed to the root's own service, as
	// the hand-over releases them (handNetworkToOS puts what it did
	// release in their place).
	Network []string
	// Note: status.json says what the final stage waits for.
	Note bool
	// Err: the mount table could not be read; nothing is noted.
	Err error
}

// mountPlan is what becomes of the mounts below the target.
type mountPlan struct {
	// Release: PID 1 mounted in the target, and its filesystems are
	// flushed and what it mounted is unmounted.
	Release bool
	// Unmount are the mounts PID 1 made below the target, deepest first.
	Unmount []mountEntry
	// Keep are those that were there before (as "/proc"): left alone.
	Keep []string
	// Err: the mount table or the target's mount could not be read.
	Err error
}

// afterHandoffPlan is the child that outlives the exec of the real init.
type afterHandoffPlan struct {
	// Final: it runs the final stage (a seed was saved for it).
	Final bool
	// KeepSelf: it keeps seedinit in the root for the running system.
	KeepSelf bool
}

// starts: there is a child after the handoff.
func (a afterHandoffPlan) starts() bool { return a.Final || a.KeepSelf }

// planHandoff decides the handoff from s. It is pure: no system call, no
// file, no log.
func planHandoff(s handoffSnapshot) handoffPlan {
	h := handoffPlan{
		KeepState:    !s.Disabled && !s.Released,
		Mounts:       planMounts(s),
		Network:      planNetwork(s),
		AfterHandoff: afterHandoffPlan{Final: s.SeedSaved, KeepSelf: s.KeepsSelf},
	}
	h.Keeper = planKeeper(s, h.Network)
	after := h.AfterHandoff.starts()
	if after {
		h.FinalWait = planFinalWait(s, h.Mounts, h.Network)
	}
	// The real init expects the root as the kernel would have mounted
	// it, and remounts it itself after its checks.
	if s.ReadOnly && (s.Initramfs || s.RemountedRW) {
		h.ReadOnly = s.Target
	}

	h.Steps = []handoffStep{stepKeepStateInTarget, stepHandNetworkToOS, stepNoteLeasesToKeep, stepNoteFinalStageWait, stepReleaseTarget}
	if s.Initramfs {
		h.Steps = append(h.Steps, stepMakeAPIMountPoints)
	}
	h.Steps = append(h.Steps, stepRestoreReadOnly, stepRecordTimeline)
	if s.Initramfs {
		h.Steps = append(h.Steps, stepSwitchRoot)
	}
	if after {
		h.Steps = append(h.Steps, stepStartAfterHandoff)
	}
	if h.Keeper.Start {
		h.Steps = append(h.Steps, stepStartLeaseKeeper)
	}
	if s.Reaping {
		h.Steps = append(h.Steps, stepStopReaping)
	}
	return h
}

// planMounts sorts the mounts below the target into those PID 1 made,
// which it releases, and those there were before, which it keeps.
func planMounts(s handoffSnapshot) mountPlan {
	if s.MountsBefore == nil || s.Released {
		return mountPlan{}
	}
	m := mountPlan{Release: true}
	if s.MountsErr != nil {
		m.Err = s.MountsErr
		return m
	}
	for _, e := range mountsBelow(s.Mounts, s.TargetMount) {
		if s.MountsBefore[e.ID] {
			m.Keep = append(m.Keep, relToTarget(s.Target, e.Point))
			continue
		}
		m.Unmount = append(m.Unmount, e)
	}
	return m
}

// relToTarget is point as seen from the target's root: "/var".
func relToTarget(target, point string) string {
	rel := strings.TrimPrefix(point, strings.TrimSuffix(target, "/"))
	if rel == "" {
		return "/"
	}
	return rel
}

// planNetwork decides which interfaces go to the root's own network
// service: those it brings up itself from the rendered files, which must
// find them as the kernel made them (ifupdown's ifup fails on an address
// already there). Without a DHCP client it cannot bring up a DHCP
// interface, which keeps its lease live instead.
func planNetwork(s handoffSnapshot) networkPlan {
	if s.LiveNet == nil && len(s.Ephemeral) == 0 {
		return networkPlan{}
	}
	if s.OSNetworkErr != nil {
		return networkPlan{Err: s.OSNetworkErr}
	}
	if !s.HasOSNetwork {
		return networkPlan{Stays: true}
	}
	n := networkPlan{Service: s.OSNetwork.name, ServiceDHCP: s.OSNetwork.dhcp}
	if s.LiveNet != nil {
		for _, iface := range s.LiveNet.Interfaces {
			if n.ServiceDHCP || !needsDHCP4(iface) {
				n.Hand = append(n.Hand, iface.Name)
			}
		}
	}
	// The search's leases on interfaces the config left alone (or when
	// there was none and the OS takes the fallback's DHCP) go as well,
	// as cloud-init tears its ephemeral network down: the OS's client
	// asks again.
	if n.ServiceDHCP {
		n.TakeBack = slices.Clone(s.Ephemeral)
	}
	return n
}

// handedOver is what the hand-over n releases on the machine s saw, in
// the order live.Release and handNetworkToOS release it: the virtual
// links, top of a stack first, then the others, then the NICs of the
// search's leases taken back.
func handedOver(s handoffSnapshot, n networkPlan) []string {
	var out []string
	there := func(name string) bool { _, ok := s.Links[name]; return ok }
	if s.LiveNet != nil {
		handed := func(iface *model.Interface) bool { return slices.Contains(n.Hand, iface.Name) && there(iface.Name) }
		for _, iface := range slices.Backward(s.LiveNet.Interfaces) {
			if handed(iface) && isVirtualLink(iface) {
				out = append(out, iface.Name)
			}
		}
		for _, iface := range s.LiveNet.Interfaces {
			if handed(iface) && !isVirtualLink(iface) {
				out = append(out, iface.Name)
			}
		}
	}
	for _, l := range n.TakeBack {
		if !slices.Contains(out, l.Interface) && there(l.Interface) {
			out = append(out, l.Interface)
		}
	}
	return out
}

// isVirtualLink: a link the live config made, which the hand-over
// deletes rather than flushes.
func isVirtualLink(iface *model.Interface) bool {
	return iface.Type == model.TypeBond || iface.Type == model.TypeBridge || iface.Type == model.TypeVLAN
}

// planKeeper decides which leases the lease keeper keeps after the
// handoff: on a root without a DHCP client of its own (or with
// seedinit.dhcp=keep), the leases still live once the network is handed
// over; seedinit.dhcp=off, none. On a root with no network service at
// all it also waits for the live config's NICs not there yet.
func planKeeper(s handoffSnapshot, n networkPlan) keeperPlan {
	if s.DHCP == DHCPOff || s.Disabled || (s.LiveNet == nil && len(s.Ephemeral) == 0) {
		return keeperPlan{}
	}
	if s.OSNetworkErr != nil {
		return keeperPlan{Err: s.OSNetworkErr}
	}
	var k keeperPlan
	if s.DHCP == DHCPKeep || !s.HasOSNetwork || !s.OSNetwork.dhcp {
		// What the hand-over takes back is no longer live.
		taken := slices.Clone(n.Hand)
		for _, l := range n.TakeBack {
			taken = append(taken, l.Interface)
		}
		live := func(iface string, addr netip.Addr) bool {
			return !slices.Contains(taken, iface) && slices.Contains(s.Links[iface], addr)
		}
		var leases []*dhcp.Lease
		for _, l := range append(slices.Clone(s.Ephemeral), s.LiveLeases...) {
			if live(l.Interface, l.Address.Addr()) {
				leases = append(leases, l)
			}
		}
		k.Leases = dedupe(leases)
		for _, l := range s.LiveLeases6 {
			if l.Stateful && live(l.Interface, l.Address) {
				k.Leases6 = append(k.Leases6, l)
			}
		}
	} else {
		k.RootClient = s.OSNetwork.name
	}
	if !s.HasOSNetwork && s.LiveNet != nil {
		switch {
		case s.MissingErr != nil:
			k.LateErr = s.MissingErr
		case len(s.MissingNICs) > 0:
			// Only what is missing now: the keeper configures each of
			// these when it comes, or at once if it came in between.
			n := s.LiveNet
			k.LateNICs = &model.Network{Version: n.Version, Interfaces: s.MissingNICs, Routes: n.Routes, DNS: n.DNS, UseIPv6: n.UseIPv6}
		}
	}
	k.Start = len(k.Leases) > 0 || len(k.Leases6) > 0 || k.LateNICs != nil
	if k.Start {
		k.MoveToKept = s.KeepsSelf
	}
	return k
}

// planFinalWait decides what the final stage waits for: the target's
// filesystems PID 1 releases (the API filesystems aside), and the
// interfaces handed to the root's own service; status.json says so when
// there is a final stage.
func planFinalWait(s handoffSnapshot, m mountPlan, n networkPlan) finalWaitPlan {
	f := finalWaitPlan{Network: handedOver(s, n)}
	if s.Released {
		return f
	}
	if m.Err != nil {
		f.Err = m.Err
		return f
	}
	for _, e := range m.Unmount {
		rel := relToTarget(s.Target, e.Point)
		if !isAPIDir(rel) && !slices.Contains(f.Mounts, rel) {
			f.Mounts = append(f.Mounts, rel)
		}
	}
	slices.Sort(f.Mounts)
	f.Note = s.SeedSaved
	return f
}

// needsDHCP4 reports whether an interface gets its IPv4 address by DHCP.
func needsDHCP4(iface *model.Interface) bool {
	return slices.ContainsFunc(iface.Subnets, func(s model.Subnet) bool {
		return s.Type == model.SubnetDHCP || s.Type == model.SubnetDHCP4
	})
}

// dedupe keeps one lease per NIC: the live config's DHCP on a NIC the
// search already leased is the later one.
func dedupe(leases []*dhcp.Lease) []*dhcp.Lease {
	var out []*dhcp.Lease
	for i := len(leases) - 1; i >= 0; i-- {
		if !slices.ContainsFunc(out, func(l *dhcp.Lease) bool { return l.Interface == leases[i].Interface }) {
			out = append([]*dhcp.Lease{leases[i]}, out...)
		}
	}
	return out
}
