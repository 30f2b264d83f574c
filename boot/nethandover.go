package boot

import (
	"errors"
	"net/netip"
	"slices"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/live"
	"github.com/seedinit/seedinit/netup/model"
)

// PID 1 brings the instance's network up live, for appliances that have
// no network service of their own. A root that has one brings the
// interfaces up itself from the files the network module rendered, and
// must find them as the kernel made them: ifupdown's ifup, for one,
// fails on an address that is already there and never takes the
// interface for up (its up lines and DNS hooks never run, ifdown and a
// restart misbehave). So at the handoff PID 1 takes back what it
// configured on every interface that service will bring up, and leaves the
// rest live.

// osNetwork is the root's own network service.
type osNetwork struct {
	name string
	// dhcp: it has a DHCPv4 client; interfaces that need one keep their
	// lease live otherwise, rather than losing their address.
	dhcp bool
}

// detectOSNetwork finds the service that brings the rendered config up in
// root, the way each renderer's files are read.
func detectOSNetwork(root *rootfs.Root) (osNetwork, bool) {
	has := func(name string) bool { _, ok := apply.LookPath(root, name); return ok }
	exists := func(paths ...string) bool { return slices.ContainsFunc(paths, root.Exists) }
	dhcpClient := slices.ContainsFunc(dhcp.IPv4Clients(), has)
	switch {
	case exists("/lib/systemd/systemd-networkd", "/usr/lib/systemd/systemd-networkd"):
		return osNetwork{name: "systemd-networkd", dhcp: true}, true
	case has("NetworkManager"):
		return osNetwork{name: "NetworkManager", dhcp: true}, true
	case has("ifup") && exists("/etc/network/interfaces"):
		return osNetwork{name: "ifupdown", dhcp: dhcpClient}, true
	case has("ifup") && exists("/etc/sysconfig/network-scripts"):
		return osNetwork{name: "network-scripts", dhcp: dhcpClient}, true
	}
	return osNetwork{}, false
}

// findOSNetwork is detectOSNetwork in the target at dir.
func findOSNetwork(dir string) (osNetwork, bool, error) {
	root, err := rootfs.Open(dir)
	if err != nil {
		return osNetwork{}, false, err
	}
	defer root.Close()
	stack, ok := detectOSNetwork(root)
	return stack, ok, nil
}

// lookAtLinks finds which of the links the live config and the leases
// name are there, with their addresses.
func lookAtLinks(n *model.Network, ephemeral, leases []*dhcp.Lease, leases6 []*dhcp.Lease6) map[string][]netip.Addr {
	var names []string
	if n != nil {
		for _, iface := range n.Interfaces {
			names = append(names, iface.Name)
		}
	}
	for _, l := range append(slices.Clone(ephemeral), leases...) {
		names = append(names, l.Interface)
	}
	for _, l := range leases6 {
		names = append(names, l.Interface)
	}
	out := map[string][]netip.Addr{}
	for _, name := range names {
		if _, seen := out[name]; seen {
			continue
		}
		if have, ok := linkAddrs(name); ok {
			out[name] = have
		}
	}
	return out
}

// handNetworkToOS releases the live network on the interfaces the root's
// own network service will bring up (h.Network), and puts what it
// released in h.FinalWait, for the final stage to wait for.
func (p *PID1) handNetworkToOS(h *handoffPlan) error {
	n := h.Network
	if n.Err != nil {
		return n.Err
	}
	if n.Stays {
		p.logger().Info("the root has no network service of its own: the network stays as PID 1 set it")
		return nil
	}
	if n.Service == "" {
		return nil
	}
	// The final stage waits for what is released here, which is what
	// the plan says unless a release fails.
	if h.AfterHandoff.starts() {
		h.FinalWait.Network = nil
	}
	var errs []error
	var released []string
	if p.liveNet != nil {
		names, err := live.Release(p.liveNet, func(iface *model.Interface) bool { return slices.Contains(n.Hand, iface.Name) })
		released = names
		errs = append(errs, err)
	}
	for _, l := range n.TakeBack {
		if slices.Contains(released, l.Interface) {
			continue
		}
		if err := l.Remove(); err != nil {
			errs = append(errs, err)
			continue
		}
		released = append(released, l.Interface)
	}
	if h.AfterHandoff.starts() {
		h.FinalWait.Network = released
	}
	if len(released) > 0 {
		p.logger().Info("network handed to the root's own service", "service", n.Service, "interfaces", strings.Join(released, " "))
	}
	return errors.Join(errs...)
}
