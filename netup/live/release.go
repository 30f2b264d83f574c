package live

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	nlink "github.com/seedinit/seedinit/netup/link"
	"github.com/seedinit/seedinit/netup/model"
)

// Release takes back from the running machine what Apply and the
// ephemeral DHCP configured on the interfaces of n that hand reports true
// for: their addresses and routes (but the kernel's IPv6 link-local
// ones), and the bonds, bridges and VLANs Apply created among them, whose
// lower links are freed. Renames stay: the rendered files name the new
// names. It is for the handoff to an OS whose own network service brings
// the interfaces up from the files seedinit rendered: ifupdown's ifup,
// for one, fails on an address that is already there ("RTNETLINK
// answers: File exists") and then never takes the interface for up, so
// its up lines and DNS hooks never run. It returns the names it released.
func Release(n *model.Network, hand func(iface *model.Interface) bool) ([]string, error) {
	var released []string
	var errs []error
	// Virtual links first, top of a stack first (a VLAN on a bond): the
	// config lists lower links before the links on them.
	for i := len(n.Interfaces) - 1; i >= 0; i-- {
		iface := n.Interfaces[i]
		if !hand(iface) {
			continue
		}
		link, err := netlink.LinkByName(iface.Name)
		if err != nil {
			continue // never made, or gone with its lower link
		}
		if iface.Type == model.TypeBond || iface.Type == model.TypeBridge || iface.Type == model.TypeVLAN {
			if err := netlink.LinkDel(link); err != nil {
				errs = append(errs, fmt.Errorf("release %s: delete the link: %w", iface.Name, err))
				continue
			}
			released = append(released, iface.Name)
		}
	}
	for _, iface := range n.Interfaces {
		if !hand(iface) || iface.Type == model.TypeBond || iface.Type == model.TypeBridge || iface.Type == model.TypeVLAN {
			continue
		}
		link, err := netlink.LinkByName(iface.Name)
		if err != nil {
			continue
		}
		if err := flush(link); err != nil {
			errs = append(errs, fmt.Errorf("release %s: %w", iface.Name, err))
			continue
		}
		released = append(released, iface.Name)
	}
	return released, errors.Join(errs...)
}

// flush deletes link's routes and addresses but the kernel's own.
func flush(link netlink.Link) error {
	var errs []error
	routes, err := nlink.RetryDump(func() ([]netlink.Route, error) { return netlink.RouteList(link, netlink.FAMILY_ALL) })
	if err != nil {
		return fmt.Errorf("list routes: %w", err)
	}
	for _, r := range routes {
		if r.Protocol == unix.RTPROT_KERNEL || isLinkLocal6(r.Dst) {
			continue
		}
		if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("delete route %s: %w", r, err))
		}
	}
	addrs, err := nlink.Addrs(link, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		if a.IP.To4() == nil && a.IP.IsLinkLocalUnicast() {
			continue
		}
		if err := netlink.AddrDel(link, &a); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			errs = append(errs, fmt.Errorf("delete address %s: %w", a.IPNet, err))
		}
	}
	return errors.Join(errs...)
}

func isLinkLocal6(dst *net.IPNet) bool {
	return dst != nil && dst.IP.To4() == nil && dst.IP.IsLinkLocalUnicast()
}
