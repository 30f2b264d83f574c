package boot

import (
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/internal/samefile"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/keeper"
	nlink "github.com/seedinit/seedinit/netup/link"
)

// An appliance image without a DHCP client keeps the address PID 1 got
// only while someone renews it: dnsmasq's default lease is an hour, and
// a WAF that loses its address an hour after boot is down. So when the
// root has no DHCP client, PID 1 writes down the leases still live at the
// handoff and starts `seedinit dhcp keep`, a process that outlives the
// exec of the real init (as the final stage's does) and renews them.
// seedinit.dhcp=off never starts it; seedinit.dhcp=keep keeps what is
// live after the hand-over, which on a root whose service has a DHCP
// client is nothing (planNetwork hands that service every interface).
// The keeper stands aside on its own when the image later starts a
// DHCP client for a NIC (see netup/dhcp/claims.go). On a root with no
// network service at all, it also configures the NICs of the network
// config that come after the boot.

// LeaseKeeperState is the keeper's state file: what PID 1 hands it, then
// what it holds (`cat` it to see the leases and their times).
// LateNICsNetwork is the live network config, for a keeper that also
// waits for the NICs it names that were not there at the handoff.
const (
	LeaseKeeperState = RunDir + "/dhcp-leases.json"
	LateNICsNetwork  = RunDir + "/network-live.json"
)

// noteLeasesToKeep writes the keeper's state file with the leases k
// keeps and, when the keeper waits for NICs of the live config that are
// not there yet, that config. It runs after the network was handed to the
// root's own service: a lease k keeps that is no longer on its NIC (a
// release that took a link with the one below it) is not written, and
// with nothing left to keep the keeper does not start.
func (p *PID1) noteLeasesToKeep(k *keeperPlan) error {
	if k.Err != nil {
		return k.Err
	}
	if k.RootClient != "" {
		p.logger().Info("the root has a DHCP client of its own: no lease keeper", "service", k.RootClient)
	}
	if k.LateErr != nil {
		p.logger().Warn("look for the network config's NICs", "error", k.LateErr.Error())
	}
	if !k.Start {
		return nil
	}
	k.Start = false
	st := dhcp.NewKeepState(liveOnly(slices.Clone(k.Leases)), liveOnly6(k.Leases6))
	if len(st.Leases) == 0 && k.LateNICs == nil {
		return nil
	}
	if err := st.Write(LeaseKeeperState); err != nil {
		return fmt.Errorf("write the lease keeper's state: %w", err)
	}
	if k.LateNICs != nil {
		if err := keeper.WriteNetwork(LateNICsNetwork, k.LateNICs); err != nil {
			return fmt.Errorf("write the network config for the NICs to come: %w", err)
		}
		names := make([]string, len(k.LateNICs.Interfaces))
		for i, iface := range k.LateNICs.Interfaces {
			names[i] = iface.Name + " (" + iface.MACAddress + ")"
		}
		p.logger().Info("NICs of the network config are not there yet: the lease keeper waits for them", "nics", strings.Join(names, ", "))
	}
	k.Start = true
	return nil
}

// startLeaseKeeper starts the keeper, after the switch, in its own
// session so that the real init inherits it, when noteLeasesToKeep wrote
// its state.
func (p *PID1) startLeaseKeeper(k keeperPlan) error {
	if !k.Start {
		return nil
	}
	args := []string{"dhcp", "keep", "--state", LeaseKeeperState}
	if k.LateNICs != nil {
		args = append(args, "--network", LateNICsNetwork)
	}
	if k.MoveToKept {
		// Run from the initramfs's copy, which the switch deleted, it would
		// pin 12 MB of RAM for as long as it runs: it moves to the copy the
		// final stage keeps in the root once that is there.
		args = append(args, "--move-to", KeptBinary)
	}
	cmd := exec.Command(samefile.SelfExe, args...)
	cmd.Stdout, cmd.Stderr = p.childConsole(), p.childConsole()
	cmd.Env = handoffEnv(p.ownCertDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s %s: %w", samefile.SelfExe, strings.Join(args, " "), err)
	}
	p.logger().Info("the DHCP leases are kept after the handoff", "pid", cmd.Process.Pid, "state", LeaseKeeperState)
	return nil
}

// liveOnly keeps the leases whose address is still on their NIC: those
// the config dropped or the root's service took back are not kept.
func liveOnly(leases []*dhcp.Lease) []*dhcp.Lease {
	return slices.DeleteFunc(leases, func(l *dhcp.Lease) bool { return !hasAddress(l.Interface, l.Address.Addr()) })
}

func liveOnly6(leases []*dhcp.Lease6) []*dhcp.Lease6 {
	return slices.DeleteFunc(slices.Clone(leases), func(l *dhcp.Lease6) bool {
		return !l.Stateful || !hasAddress(l.Interface, l.Address)
	})
}

// hasAddress reports whether addr is on the link iface.
func hasAddress(iface string, addr netip.Addr) bool {
	have, _ := linkAddrs(iface)
	return slices.Contains(have, addr)
}

// linkAddrs are the addresses on the link called name; ok is false when
// there is no such link.
func linkAddrs(name string) (addrs []netip.Addr, ok bool) {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return nil, false
	}
	list, _ := nlink.Addrs(link, netlink.FAMILY_ALL)
	addrs = []netip.Addr{}
	for _, a := range list {
		if addr, ok := netip.AddrFromSlice(a.IP); ok {
			addrs = append(addrs, addr.Unmap())
		}
	}
	return addrs, true
}
