package live

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/netup/link"
)

// LinkLocal is an IPv4 link-local address (RFC 3927) PID 1 put on a NIC
// to reach a metadata service that answers on a link-local address where
// no DHCP server is (Firecracker's MMDS at 169.254.169.254): the kernel's
// prefix route for 169.254.0.0/16 makes the service on-link.
type LinkLocal struct {
	Interface string
	Address   netip.Prefix
}

// UpLinkLocal puts an IPv4 link-local address on the first Ethernet NIC
// and brings it up. The address comes from the NIC's MAC, in RFC 3927's
// range (169.254.1.0 to 169.254.254.255) and never 169.254.169.254; it
// is not probed for conflicts (RFC 3927's ARP probes take seconds), as
// the only peer on such a link is the hypervisor's service. Remove takes
// it away again.
func UpLinkLocal(opts Options) (*LinkLocal, error) {
	opts = opts.withDefaults()
	nics, err := link.Discover(opts.SysClassNet)
	if err != nil {
		return nil, err
	}
	for _, nic := range nics {
		if nic.Type != 1 || nic.MAC == "" || nic.Bond || nic.Bridge || nic.VLAN {
			continue
		}
		mac, err := net.ParseMAC(nic.MAC)
		if err != nil || len(mac) < 6 {
			continue
		}
		addr := linkLocalFor(mac)
		l, err := netlink.LinkByName(nic.Name)
		if err != nil {
			return nil, fmt.Errorf("find %s: %w", nic.Name, err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return nil, fmt.Errorf("bring %s up: %w", nic.Name, err)
		}
		a := &netlink.Addr{IPNet: &net.IPNet{IP: addr.Addr().AsSlice(), Mask: net.CIDRMask(addr.Bits(), 32)}, Scope: unix.RT_SCOPE_LINK}
		if err := netlink.AddrAdd(l, a); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("add %s to %s: %w", addr, nic.Name, err)
		}
		opts.Log.Info("IPv4 link-local address up", "interface", nic.Name, "address", addr.String())
		return &LinkLocal{Interface: nic.Name, Address: addr}, nil
	}
	return nil, errors.New("no Ethernet NIC for an IPv4 link-local address")
}

// linkLocalFor is the address UpLinkLocal gives a NIC with mac.
func linkLocalFor(mac net.HardwareAddr) netip.Prefix {
	third := 1 + mac[4]%254 // 1 to 254
	fourth := mac[5]
	if third == 169 && fourth == 254 {
		fourth = 253
	}
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{169, 254, third, fourth}), 16)
}

// Remove takes the address off its NIC (the NIC stays up).
func (l *LinkLocal) Remove() error {
	nl, err := netlink.LinkByName(l.Interface)
	if err != nil {
		return err
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: l.Address.Addr().AsSlice(), Mask: net.CIDRMask(l.Address.Bits(), 32)}}
	if err := netlink.AddrDel(nl, a); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
		return fmt.Errorf("remove %s from %s: %w", l.Address, l.Interface, err)
	}
	return nil
}
