package boot

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/netup/dhcp"
	nlink "github.com/seedinit/seedinit/netup/link"
	"github.com/seedinit/seedinit/netup/live"
	"github.com/seedinit/seedinit/netup/model"
)

// An appliance image without a DHCP client keeps the address PID 1 got
// only while someone renews it: dnsmasq's default lease is an hour, and
// a WAF that loses its address an hour after boot is down. So when the
// root has no DHCP client, PID 1 writes down the leases still live at the
// handoff and starts `seedinit dhcp keep`, a process that outlives the
// exec of the real init (as the final stage's does) and renews them.
// seedinit.dhcp=keep starts it whatever the root has, seedinit.dhcp=off
// never. The keeper stands aside on its own when the image later starts a
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

// noteLeasesToKeep decides whether the leases are kept after the handoff
// and, if so, writes the keeper's state file. It runs after the network
// was handed to the root's own service, so what that service took back is
// no longer live and is not kept. On a root with no network service at
// all, NICs of the live config that have not appeared yet are waited for
// by the same keeper (a NIC attached after the boot), which configures
// them as PID 1 would have.
func (p *PID1) noteLeasesToKeep() error {
	if p.Opts.DHCP == DHCPOff || p.Opts.Disable || (p.liveNet == nil && len(p.ephemeral) == 0) {
		return nil
	}
	root, err := rootfs.Open(p.targetDir())
	if err != nil {
		return err
	}
	stack, hasService := detectOSNetwork(root)
	root.Close()
	st := &dhcp.KeepState{}
	if p.Opts.DHCP == DHCPKeep || !hasService || !stack.dhcp {
		st = dhcp.NewKeepState(dedupe(liveOnly(append(slices.Clone(p.ephemeral), p.liveLeases...))), liveOnly6(p.liveLeases6))
	} else {
		p.logger().Info("the root has a DHCP client of its own: no lease keeper", "service", stack.name)
	}
	var late []*model.Interface
	if !hasService && p.liveNet != nil {
		if late, err = live.Missing(p.liveNet); err != nil {
			p.logger().Warn("look for the network config's NICs", "error", err.Error())
		}
	}
	if len(st.Leases) == 0 && len(late) == 0 {
		return nil
	}
	if err := st.Write(LeaseKeeperState); err != nil {
		return fmt.Errorf("write the lease keeper's state: %w", err)
	}
	if len(late) > 0 {
		// Only what is missing now: the keeper configures each of these
		// when it comes, or at once if it came in between.
		n := &model.Network{Version: p.liveNet.Version, Interfaces: late, Routes: p.liveNet.Routes, DNS: p.liveNet.DNS, UseIPv6: p.liveNet.UseIPv6}
		b, err := json.Marshal(n)
		if err == nil {
			err = os.WriteFile(LateNICsNetwork, b, 0o600)
		}
		if err != nil {
			return fmt.Errorf("write the network config for the NICs to come: %w", err)
		}
		names := make([]string, len(late))
		for i, iface := range late {
			names[i] = iface.Name + " (" + iface.MACAddress + ")"
		}
		p.logger().Info("NICs of the network config are not there yet: the lease keeper waits for them", "nics", strings.Join(names, ", "))
		p.waitLateNICs = true
	}
	p.keepLeases = true
	return nil
}

// startLeaseKeeper starts the keeper, after the switch, in its own
// session so that the real init inherits it.
func (p *PID1) startLeaseKeeper() error {
	args := []string{"dhcp", "keep", "--state", LeaseKeeperState}
	if p.waitLateNICs {
		args = append(args, "--network", LateNICsNetwork)
	}
	if p.keepsSelfAfterHandoff() {
		// Run from the initramfs's copy, which the switch deleted, it would
		// pin 12 MB of RAM for as long as it runs: it moves to the copy the
		// final stage keeps in the root once that is there.
		args = append(args, "--move-to", KeptBinary)
	}
	cmd := exec.Command(selfExe, args...)
	cmd.Stdout, cmd.Stderr = p.childConsole(), p.childConsole()
	cmd.Env = handoffEnv(p.ownCertDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s %s: %w", selfExe, strings.Join(args, " "), err)
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

func hasAddress(iface string, addr netip.Addr) bool {
	link, err := netlink.LinkByName(iface)
	if err != nil {
		return false
	}
	addrs, err := nlink.Addrs(link, netlink.FAMILY_ALL)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(addrs, func(a netlink.Addr) bool { return a.IP.Equal(net.IP(addr.AsSlice())) })
}
