package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/server4"
	"github.com/seedinit/seedinit/serve/inventory"
)

// DHCP is `seedinit serve --dhcp RANGE`: a DHCPv4 server (insomniacslk's
// server4) for the inventory's MACs only, so that the lease that finds an
// instance by its address is the server's own, known the moment it is
// acked, with no lease file between. An instance with an address selector
// of one host address in the range gets that address; the others get the
// next free one. A MAC the inventory does not have gets no answer: a lab
// server plugged into the wrong segment must not hand out addresses.
type DHCP struct {
	cfg  DHCPConfig
	inv  func() *inventory.Inventory
	log  *slog.Logger
	now  func() time.Time
	mu   sync.Mutex
	mac  map[string]netip.Addr // MAC → address held (offered or leased)
	held map[netip.Addr]string // and back
	addr map[netip.Addr]Lease  // address → lease (acked only)
}

// DHCPConfig is what the DHCP server gives.
type DHCPConfig struct {
	// First and Last bound the pool; Prefix is the subnet's length.
	First, Last netip.Addr
	Prefix      int
	// ServerIP is this server's address on the link: the server
	// identifier, and where the instances find the metadata service.
	ServerIP netip.Addr
	// Router and DNS are given when valid / non-empty.
	Router    netip.Addr
	DNS       []netip.Addr
	LeaseTime time.Duration
}

// ParseDHCPRange reads FIRST-LAST/PREFIX (10.99.0.10-10.99.0.250/24).
func ParseDHCPRange(s string) (first, last netip.Addr, prefix int, err error) {
	r, p, ok := strings.Cut(s, "/")
	a, b, ok2 := strings.Cut(r, "-")
	if !ok || !ok2 {
		return first, last, 0, fmt.Errorf("--dhcp %q: want FIRST-LAST/PREFIX, 10.99.0.10-10.99.0.250/24", s)
	}
	if first, err = netip.ParseAddr(a); err == nil {
		last, err = netip.ParseAddr(b)
	}
	if err == nil {
		prefix, err = strconv.Atoi(p)
	}
	switch {
	case err != nil:
		return first, last, 0, fmt.Errorf("--dhcp %q: want FIRST-LAST/PREFIX: %w", s, err)
	case !first.Is4() || !last.Is4() || prefix < 8 || prefix > 30:
		return first, last, 0, fmt.Errorf("--dhcp %q: want IPv4 addresses and a prefix of 8 to 30", s)
	case last.Less(first) || netip.PrefixFrom(first, prefix).Masked() != netip.PrefixFrom(last, prefix).Masked():
		return first, last, 0, fmt.Errorf("--dhcp %q: the range is not one subnet, first to last", s)
	}
	return first, last, prefix, nil
}

// NewDHCP makes the server; inv is the inventory being served now.
func NewDHCP(cfg DHCPConfig, inv func() *inventory.Inventory, log *slog.Logger, now func() time.Time) *DHCP {
	if cfg.LeaseTime <= 0 {
		cfg.LeaseTime = time.Hour
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &DHCP{cfg: cfg, inv: inv, log: log, now: now, mac: map[string]netip.Addr{}, held: map[netip.Addr]string{}, addr: map[netip.Addr]Lease{}}
}

// MAC is the MAC an address is leased to (the Leases lookup's role).
func (d *DHCP) MAC(a netip.Addr) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	le, ok := d.addr[a.Unmap()]
	if !ok || !d.now().Before(le.Expires) {
		return "", false
	}
	return le.MAC, true
}

// Serve answers on conn (a UDP socket on port 67 bound to the link)
// until it is closed.
func (d *DHCP) Serve(conn net.PacketConn) error {
	srv, err := server4.NewServer("", nil, d.Handle, server4.WithConn(conn))
	if err != nil {
		return err
	}
	return srv.Serve()
}

// Listen opens the server's socket on iface, port 67.
func (d *DHCP) Listen(iface string) (net.PacketConn, error) {
	c, err := server4.NewIPv4UDPConn(iface, &net.UDPAddr{IP: net.IPv4zero, Port: dhcpv4.ServerPort})
	if err != nil {
		return nil, fmt.Errorf("listen for DHCP on %s: %w", iface, err)
	}
	return c, nil
}

// Handle answers one message: DISCOVER with an OFFER, REQUEST with an
// ACK or a NAK, RELEASE by forgetting the lease.
func (d *DHCP) Handle(conn net.PacketConn, peer net.Addr, m *dhcpv4.DHCPv4) {
	if m.OpCode != dhcpv4.OpcodeBootRequest || len(m.ClientHWAddr) != 6 {
		return
	}
	mac := m.ClientHWAddr.String()
	inst, kind, ok := d.inv().Lookup(mac)
	if !ok || kind != "mac" {
		d.log.Info("DHCP refused", "mac", mac, "why", "no instance has this MAC")
		return
	}
	var mt dhcpv4.MessageType
	var yours netip.Addr
	switch m.MessageType() {
	case dhcpv4.MessageTypeDiscover:
		if yours, ok = d.allocate(mac, inst, netip.Addr{}); !ok {
			d.log.Warn("DHCP refused", "mac", mac, "instance", inst.Name, "why", "no free address in the range")
			return
		}
		mt = dhcpv4.MessageTypeOffer
	case dhcpv4.MessageTypeRequest:
		if sid := m.ServerIdentifier(); sid != nil && !sid.Equal(net.IP(d.cfg.ServerIP.AsSlice())) {
			d.mu.Lock()
			if a, ok := d.mac[mac]; ok { // it took another server's offer
				delete(d.mac, mac)
				delete(d.held, a)
			}
			d.mu.Unlock()
			return
		}
		want := m.RequestedIPAddress()
		if want == nil {
			want = m.ClientIPAddr
		}
		wa, _ := netip.AddrFromSlice(want.To4())
		// A client that had a lease before this server started asks for
		// it again (INIT-REBOOT, or a renewal): it keeps it when it is
		// free, so a restart moves no instance.
		held, ok := d.allocate(mac, inst, wa)
		if !ok || wa != held {
			d.log.Info("DHCP NAK", "mac", mac, "instance", inst.Name, "asked", wa.String(), "why", "not the address this instance holds")
			mt, yours = dhcpv4.MessageTypeNak, netip.Addr{}
			break
		}
		mt, yours = dhcpv4.MessageTypeAck, held
		d.mu.Lock()
		d.addr[held] = Lease{Addr: held, MAC: mac, Expires: d.now().Add(d.cfg.LeaseTime)}
		d.mu.Unlock()
		d.log.Info("DHCP lease", "mac", mac, "instance", inst.Name, "address", held.String())
	case dhcpv4.MessageTypeRelease:
		d.mu.Lock()
		if a, ok := d.mac[mac]; ok {
			delete(d.addr, a)
		}
		d.mu.Unlock()
		return
	default:
		return
	}
	mods := []dhcpv4.Modifier{
		dhcpv4.WithMessageType(mt),
		dhcpv4.WithServerIP(net.IP(d.cfg.ServerIP.AsSlice())),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(net.IP(d.cfg.ServerIP.AsSlice()))),
	}
	if mt != dhcpv4.MessageTypeNak {
		mods = append(mods,
			dhcpv4.WithYourIP(net.IP(yours.AsSlice())),
			dhcpv4.WithNetmask(net.CIDRMask(d.cfg.Prefix, 32)),
			dhcpv4.WithLeaseTime(uint32(d.cfg.LeaseTime/time.Second)))
		if inst.Hostname != "" {
			mods = append(mods, dhcpv4.WithOption(dhcpv4.OptHostName(inst.Hostname)))
		}
		if d.cfg.Router.IsValid() {
			mods = append(mods, dhcpv4.WithRouter(net.IP(d.cfg.Router.AsSlice())))
		}
		if len(d.cfg.DNS) > 0 {
			var dns []net.IP
			for _, a := range d.cfg.DNS {
				dns = append(dns, net.IP(a.AsSlice()))
			}
			mods = append(mods, dhcpv4.WithDNS(dns...))
		}
	}
	reply, err := dhcpv4.NewReplyFromRequest(m, mods...)
	if err != nil {
		d.log.Error("DHCP reply not made", "mac", mac, "error", err.Error())
		return
	}
	if _, err := conn.WriteTo(reply.ToBytes(), replyTo(m, peer)); err != nil {
		d.log.Warn("DHCP reply not sent", "mac", mac, "error", err.Error())
	}
}

// replyTo is where a reply goes (RFC 2131 4.1): a relay's giaddr, a
// client that has an address, else the link's broadcast.
func replyTo(m *dhcpv4.DHCPv4, peer net.Addr) net.Addr {
	if gi := m.GatewayIPAddr; gi != nil && !gi.IsUnspecified() {
		return &net.UDPAddr{IP: gi, Port: dhcpv4.ServerPort}
	}
	if u, ok := peer.(*net.UDPAddr); ok && !u.IP.IsUnspecified() && !u.IP.Equal(net.IPv4bcast) {
		return u
	}
	return &net.UDPAddr{IP: net.IPv4bcast, Port: dhcpv4.ClientPort}
}

// allocate is the address mac holds, held anew when it has none: its
// instance's own (a host address selector in the range), else asked
// (when valid, in the range, and neither held nor reserved), else the
// next one no other MAC holds.
func (d *DHCP) allocate(mac string, inst *inventory.Instance, asked netip.Addr) (netip.Addr, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if a, ok := d.mac[mac]; ok {
		return a, true
	}
	taken := func(a netip.Addr) bool {
		le, ok := d.addr[a]
		if ok && le.MAC != mac && d.now().Before(le.Expires) {
			return true
		}
		m, ok := d.held[a]
		return ok && m != mac
	}
	inRange := func(a netip.Addr) bool { return !a.Less(d.cfg.First) && !d.cfg.Last.Less(a) }
	for _, p := range inst.Addresses {
		if p.IsSingleIP() && inRange(p.Addr()) && !taken(p.Addr()) {
			d.mac[mac], d.held[p.Addr()] = p.Addr(), mac
			return p.Addr(), true
		}
	}
	reserved := map[netip.Addr]bool{}
	for _, other := range d.inv().Instances {
		for _, p := range other.Addresses {
			if p.IsSingleIP() && other != inst {
				reserved[p.Addr()] = true
			}
		}
	}
	if asked.IsValid() && inRange(asked) && asked != d.cfg.ServerIP && !reserved[asked] && !taken(asked) {
		d.mac[mac], d.held[asked] = asked, mac
		return asked, true
	}
	for a := d.cfg.First; inRange(a); a = a.Next() {
		if a != d.cfg.ServerIP && !reserved[a] && !taken(a) {
			d.mac[mac], d.held[a] = a, mac
			return a, true
		}
	}
	return netip.Addr{}, false
}
