package boot

import (
	"errors"
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

// needsDHCP4 reports whether an interface gets its IPv4 address by DHCP.
func needsDHCP4(iface *model.Interface) bool {
	return slices.ContainsFunc(iface.Subnets, func(s model.Subnet) bool {
		return s.Type == model.SubnetDHCP || s.Type == model.SubnetDHCP4
	})
}

// handNetworkToOS releases the live network on the interfaces the root's
// own network service will bring up, and records them for the final
// stage, which waits for them to be up again.
func (p *PID1) handNetworkToOS() error {
	if p.liveNet == nil && len(p.ephemeral) == 0 {
		return nil
	}
	root, err := rootfs.Open(p.targetDir())
	if err != nil {
		return err
	}
	defer root.Close()
	stack, ok := detectOSNetwork(root)
	if !ok {
		p.logger().Info("the root has no network service of its own: the network stays as PID 1 set it")
		return nil
	}
	var errs []error
	var released []string
	if p.liveNet != nil {
		hand := func(iface *model.Interface) bool { return stack.dhcp || !needsDHCP4(iface) }
		names, err := live.Release(p.liveNet, hand)
		released = names
		errs = append(errs, err)
	}
	// The search's leases on interfaces the config left alone (or when
	// there was none and the OS takes the fallback's DHCP) go as well, as
	// cloud-init tears its ephemeral network down: the OS's client asks
	// again.
	if stack.dhcp {
		for _, l := range p.ephemeral {
			if slices.Contains(released, l.Interface) {
				continue
			}
			if err := l.Remove(); err != nil {
				errs = append(errs, err)
				continue
			}
			released = append(released, l.Interface)
		}
	}
	if len(released) > 0 {
		p.finalWaitsForNetwork = released
		p.logger().Info("network handed to the root's own service", "service", stack.name, "interfaces", strings.Join(released, " "))
	}
	return errors.Join(errs...)
}
