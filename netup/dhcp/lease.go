// Package dhcp gets an ephemeral DHCPv4 lease with nclient4 on one NIC or
// on several at once, and applies it with netlink: address, classless
// static routes (option 121) or routers (option 3), MTU (option 26), and
// the DNS servers and search domains for resolv.conf. v6.go does DHCPv6
// (stateful and stateless, nclient6) and waits for SLAAC addresses.
package dhcp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/nclient4"
)

// Route is one route a lease asks for. A zero Gateway means the
// destination is on the link.
type Route struct {
	Destination netip.Prefix
	Gateway     netip.Addr
}

// Lease is what a DHCPv4 server gave one interface.
type Lease struct {
	Interface string
	// Address is the leased address with the subnet mask's prefix length.
	Address netip.Prefix
	// Routes are the classless static routes (option 121) when the server
	// sent any, else a default route through the first router (option 3):
	// RFC 3442 says a client that gets option 121 ignores option 3.
	Routes []Route
	// Routers are option 3 as sent, for callers that record them.
	Routers    []netip.Addr
	MTU        int
	DNS        []netip.Addr
	Search     []string
	DomainName string
	Hostname   string
	ServerID   netip.Addr
	Broadcast  netip.Addr
	LeaseTime  time.Duration
	Acquired   time.Time
	// SiteOptions are the site-specific options (224 to 254) as sent:
	// Azure names its wireserver in 245.
	SiteOptions map[uint8][]byte

	raw *nclient4.Lease
	// acquiredBoot is CLOCK_BOOTTIME when the lease was read: the lease
	// keeper times renewals on it, which the wall clock (set by NTP after
	// the boot) is not fit for.
	acquiredBoot time.Duration
}

// FromACK reads a lease from a DHCPACK. Options that are malformed are
// reported in the error; the lease keeps everything else.
func FromACK(iface string, ack *dhcpv4.DHCPv4) (*Lease, error) {
	if ack == nil {
		return nil, errors.New("read DHCP lease: no ACK")
	}
	var errs []error
	l := &Lease{Interface: iface, Acquired: time.Now(), acquiredBoot: bootTime()}
	addr, ok := netip.AddrFromSlice(ack.YourIPAddr.To4())
	if !ok || !addr.IsValid() || addr.IsUnspecified() {
		return nil, fmt.Errorf("read DHCP lease on %s: ACK carries no address (yiaddr %v)", iface, ack.YourIPAddr)
	}
	bits := 32
	if mask := ack.SubnetMask(); mask != nil {
		ones, size := mask.Size()
		if size != 32 {
			errs = append(errs, fmt.Errorf("read DHCP lease on %s: option 1 (subnet mask): not a contiguous mask %v", iface, net.IP(mask)))
		} else {
			bits = ones
		}
	} else {
		// Without option 1 the class of the address decides, as dhclient does.
		switch first := addr.As4()[0]; {
		case first < 128:
			bits = 8
		case first < 192:
			bits = 16
		default:
			bits = 24
		}
	}
	l.Address = netip.PrefixFrom(addr, bits)

	for _, r := range ack.Router() {
		if a, ok := netip.AddrFromSlice(r.To4()); ok {
			l.Routers = append(l.Routers, a)
		}
	}
	if raw := ack.Options.Get(dhcpv4.OptionClasslessStaticRoute); raw != nil {
		routes, err := parseClasslessRoutes(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("read DHCP lease on %s: option 121 (classless static routes): %w", iface, err))
		}
		l.Routes = routes
	}
	if l.Routes == nil && len(l.Routers) > 0 {
		l.Routes = []Route{{Destination: netip.MustParsePrefix("0.0.0.0/0"), Gateway: l.Routers[0]}}
	}
	if raw := ack.Options.Get(dhcpv4.OptionInterfaceMTU); raw != nil {
		if len(raw) != 2 {
			errs = append(errs, fmt.Errorf("read DHCP lease on %s: option 26 (MTU): want 2 bytes, got %d", iface, len(raw)))
		} else if mtu := int(binary.BigEndian.Uint16(raw)); mtu >= 68 {
			l.MTU = mtu
		} else {
			errs = append(errs, fmt.Errorf("read DHCP lease on %s: option 26 (MTU): %d is below the minimum of 68", iface, mtu))
		}
	}
	for _, d := range ack.DNS() {
		if a, ok := netip.AddrFromSlice(d.To4()); ok {
			l.DNS = append(l.DNS, a)
		}
	}
	if labels := ack.DomainSearch(); labels != nil {
		l.Search = append(l.Search, labels.Labels...)
	}
	l.DomainName = strings.TrimSpace(ack.DomainName())
	l.Hostname = ack.HostName()
	if s, ok := netip.AddrFromSlice(ack.ServerIdentifier().To4()); ok {
		l.ServerID = s
	}
	if b, ok := netip.AddrFromSlice(ack.BroadcastAddress().To4()); ok {
		l.Broadcast = b
	}
	l.LeaseTime = ack.IPAddressLeaseTime(0)
	for code, value := range ack.Options {
		if code >= 224 && code <= 254 {
			if l.SiteOptions == nil {
				l.SiteOptions = map[uint8][]byte{}
			}
			l.SiteOptions[code] = bytes.Clone(value)
		}
	}
	return l, errors.Join(errs...)
}

// parseClasslessRoutes decodes RFC 3442 option 121: a prefix length, the
// significant octets of the destination, and a router, repeated.
func parseClasslessRoutes(b []byte) ([]Route, error) {
	var routes []Route
	for i := 0; i < len(b); {
		width := int(b[i])
		if width > 32 {
			return routes, fmt.Errorf("route %d: prefix length %d is over 32", len(routes), width)
		}
		octets := (width + 7) / 8
		if i+1+octets+4 > len(b) {
			return routes, fmt.Errorf("route %d: truncated", len(routes))
		}
		var dst [4]byte
		copy(dst[:], b[i+1:i+1+octets])
		var gw [4]byte
		copy(gw[:], b[i+1+octets:i+1+octets+4])
		i += 1 + octets + 4
		route := Route{Destination: netip.PrefixFrom(netip.AddrFrom4(dst), width).Masked()}
		if g := netip.AddrFrom4(gw); !g.IsUnspecified() {
			route.Gateway = g
		}
		routes = append(routes, route)
	}
	return routes, nil
}

// ResolvConf returns /etc/resolv.conf contents for the lease's DNS
// servers and search domains (the domain name when no search list was
// sent), or nil when the lease has no DNS servers.
func (l *Lease) ResolvConf() []byte {
	if len(l.DNS) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("# Generated by seedinit from the DHCP lease on " + l.Interface + "\n")
	for _, d := range l.DNS {
		b.WriteString("nameserver " + d.String() + "\n")
	}
	search := l.Search
	if len(search) == 0 && l.DomainName != "" {
		search = []string{l.DomainName}
	}
	if len(search) > 0 {
		b.WriteString("search " + strings.Join(search, " ") + "\n")
	}
	return []byte(b.String())
}
