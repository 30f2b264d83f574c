package dhcp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Apply configures the lease on its interface with netlink: MTU, the
// address, then the routes (on-link ones first, and a host route to any
// gateway outside the leased subnet, as cloud-init's ephemeral network
// does for /32 leases). It replaces what is there, so applying a lease
// twice converges. Routes that cannot be added are reported and the rest
// still are.
func (l *Lease) Apply() error {
	link, err := netlink.LinkByName(l.Interface)
	if err != nil {
		return fmt.Errorf("apply dhcp lease on %s: find link: %w", l.Interface, err)
	}
	if l.MTU > 0 && link.Attrs().MTU != l.MTU {
		if err := netlink.LinkSetMTU(link, l.MTU); err != nil {
			return fmt.Errorf("apply dhcp lease on %s: set MTU %d: %w", l.Interface, l.MTU, err)
		}
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("apply dhcp lease on %s: set link up: %w", l.Interface, err)
	}
	addr := &netlink.Addr{IPNet: prefixToIPNet(l.Address)}
	if l.Broadcast.IsValid() {
		addr.Broadcast = net.IP(l.Broadcast.AsSlice())
	}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return fmt.Errorf("apply dhcp lease on %s: add address %s: %w", l.Interface, l.Address, err)
	}
	var errs []error
	for _, r := range l.routesToInstall() {
		if err := netlink.RouteReplace(r.netlinkRoute(link.Attrs().Index)); err != nil {
			errs = append(errs, fmt.Errorf("apply dhcp lease on %s: add route %s: %w", l.Interface, r, err))
		}
	}
	return errors.Join(errs...)
}

// Remove takes the lease's routes and address off the interface again,
// for an ephemeral lease used only to reach a metadata service; the
// interface's other addresses stay.
func (l *Lease) Remove() error {
	link, err := netlink.LinkByName(l.Interface)
	if err != nil {
		return fmt.Errorf("remove dhcp lease on %s: find link: %w", l.Interface, err)
	}
	var errs []error
	routes := l.routesToInstall()
	for i := len(routes) - 1; i >= 0; i-- {
		if err := netlink.RouteDel(routes[i].netlinkRoute(link.Attrs().Index)); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("remove dhcp lease on %s: delete route %s: %w", l.Interface, routes[i], err))
		}
	}
	// Deleting a subnet's primary address deletes its secondaries too
	// (a static address the instance's config added beside the lease),
	// unless the kernel promotes them, as most distributions set it to.
	promote := "/proc/sys/net/ipv4/conf/" + l.Interface + "/promote_secondaries"
	if err := os.WriteFile(promote, []byte("1\n"), 0o644); err != nil {
		errs = append(errs, fmt.Errorf("remove dhcp lease on %s: keep the other addresses: %w", l.Interface, err))
		return errors.Join(errs...)
	}
	if err := netlink.AddrDel(link, &netlink.Addr{IPNet: prefixToIPNet(l.Address)}); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
		errs = append(errs, fmt.Errorf("remove dhcp lease on %s: delete address %s: %w", l.Interface, l.Address, err))
	}
	return errors.Join(errs...)
}

func (r Route) String() string {
	if r.Gateway.IsValid() {
		return r.Destination.String() + " via " + r.Gateway.String()
	}
	return r.Destination.String() + " on link"
}

func (r Route) netlinkRoute(linkIndex int) *netlink.Route {
	nr := &netlink.Route{LinkIndex: linkIndex, Dst: prefixToIPNet(r.Destination), Protocol: unix.RTPROT_DHCP}
	if r.Gateway.IsValid() {
		nr.Gw = net.IP(r.Gateway.AsSlice())
	} else {
		nr.Scope = netlink.SCOPE_LINK
	}
	return nr
}

// routesToInstall orders the lease's routes so that every gateway is
// reachable when its route is added: on-link routes first, with a host
// route for a gateway outside the leased subnet.
func (l *Lease) routesToInstall() []Route {
	var onLink, viaGateway []Route
	subnet := l.Address.Masked()
	haveOnLink := map[netip.Prefix]bool{}
	for _, r := range l.Routes {
		if !r.Gateway.IsValid() {
			onLink = append(onLink, r)
			haveOnLink[r.Destination] = true
		}
	}
	for _, r := range l.Routes {
		if !r.Gateway.IsValid() {
			continue
		}
		host := netip.PrefixFrom(r.Gateway, 32)
		if !subnet.Contains(r.Gateway) && !haveOnLink[host] && !coveredBy(onLink, r.Gateway) {
			onLink = append(onLink, Route{Destination: host})
			haveOnLink[host] = true
		}
		viaGateway = append(viaGateway, r)
	}
	return append(onLink, viaGateway...)
}

func coveredBy(routes []Route, a netip.Addr) bool {
	for _, r := range routes {
		if r.Destination.Contains(a) {
			return true
		}
	}
	return false
}

func prefixToIPNet(p netip.Prefix) *net.IPNet {
	bits := 32
	if p.Addr().Is6() {
		bits = 128
	}
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), bits)}
}
