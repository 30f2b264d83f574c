package dhcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/dhcpv6/nclient6"
	"github.com/insomniacslk/dhcp/iana"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	nlink "github.com/seedinit/seedinit/netup/link"
)

// DefaultSLAACTimeout bounds WaitSLAAC when the caller gives no bound:
// routers send their first advertisements within seconds of a router
// solicitation, and duplicate address detection takes about one more.
const DefaultSLAACTimeout = 15 * time.Second

// linkLocalTimeout bounds the wait for a usable link-local address, which
// DHCPv6 needs as its source address: DAD on a fresh link takes 1-2s.
const linkLocalTimeout = 10 * time.Second

// Lease6 is what a DHCPv6 server gave one interface: an address (IA_NA)
// for a stateful exchange, DNS servers and search domains for both kinds.
type Lease6 struct {
	Interface string
	// Stateful is true for a Solicit/Request exchange, false for an
	// Information-Request that only asked for DNS.
	Stateful bool
	// Address is the IA_NA address, invalid for a stateless lease. It is
	// configured as a /128: DHCPv6 carries no prefix length, the on-link
	// prefix comes from router advertisements (as with dhclient -6).
	Address           netip.Addr
	PreferredLifetime time.Duration
	ValidLifetime     time.Duration
	// T1 and T2 are the IA_NA renewal times the server asked for.
	T1, T2   time.Duration
	DNS      []netip.Addr
	Search   []string
	Acquired time.Time

	// reply is the server's Reply, which the lease keeper renews from (its
	// client and server DUIDs and the IA_NA's IAID).
	reply        *dhcpv6.Message
	acquiredBoot time.Duration
}

// ParseReply6 reads a DHCPv6 Reply (or Advertise) from the wire, for a
// stateful exchange when stateful is true. See FromReply6.
func ParseReply6(iface string, data []byte, stateful bool) (*Lease6, error) {
	msg, err := dhcpv6.MessageFromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("read DHCPv6 reply on %s: %w", iface, err)
	}
	return FromReply6(iface, msg, stateful)
}

// FromReply6 reads a lease from a DHCPv6 Reply. A stateful lease needs an
// IA_NA with an address and no failure status; malformed DNS or search
// options are reported in the error while the lease keeps the rest.
func FromReply6(iface string, reply *dhcpv6.Message, stateful bool) (*Lease6, error) {
	if reply == nil {
		return nil, fmt.Errorf("read DHCPv6 reply on %s: no reply", iface)
	}
	if st := reply.Options.Status(); st != nil && st.StatusCode != iana.StatusSuccess {
		return nil, fmt.Errorf("read DHCPv6 reply on %s: server says %s: %q", iface, st.StatusCode, st.StatusMessage)
	}
	l := &Lease6{Interface: iface, Stateful: stateful, Acquired: time.Now(), reply: reply, acquiredBoot: bootTime()}
	var errs []error
	if stateful {
		ia := reply.Options.OneIANA()
		if ia == nil {
			return nil, fmt.Errorf("read DHCPv6 reply on %s: no IA_NA in the reply", iface)
		}
		if st := ia.Options.Status(); st != nil && st.StatusCode != iana.StatusSuccess {
			return nil, fmt.Errorf("read DHCPv6 reply on %s: IA_NA status %s: %q", iface, st.StatusCode, st.StatusMessage)
		}
		for _, a := range ia.Options.Addresses() {
			addr, ok := netip.AddrFromSlice(a.IPv6Addr)
			if !ok || !addr.Is6() || addr.Is4In6() || !addr.IsGlobalUnicast() || addr.IsLinkLocalUnicast() {
				errs = append(errs, fmt.Errorf("read DHCPv6 reply on %s: IA_NA address %v is not a global IPv6 address", iface, a.IPv6Addr))
				continue
			}
			if a.ValidLifetime == 0 {
				// A zero valid lifetime withdraws the address (RFC 8415 21.6).
				continue
			}
			l.Address = addr
			l.PreferredLifetime = a.PreferredLifetime
			l.ValidLifetime = a.ValidLifetime
			break
		}
		if !l.Address.IsValid() {
			return nil, errors.Join(append(errs, fmt.Errorf("read DHCPv6 reply on %s: IA_NA carries no usable address", iface))...)
		}
		l.T1, l.T2 = ia.T1, ia.T2
	}
	for _, d := range reply.Options.DNS() {
		addr, ok := netip.AddrFromSlice(d)
		if !ok || !addr.Is6() || addr.IsUnspecified() {
			errs = append(errs, fmt.Errorf("read DHCPv6 reply on %s: option 23 (DNS servers): bad address %v", iface, d))
			continue
		}
		l.DNS = append(l.DNS, addr.Unmap())
	}
	if labels := reply.Options.DomainSearchList(); labels != nil {
		for _, name := range labels.Labels {
			name = strings.TrimSuffix(name, ".")
			if name == "" || strings.ContainsAny(name, " \t\n\r#;") {
				errs = append(errs, fmt.Errorf("read DHCPv6 reply on %s: option 24 (domain search list): bad name %q", iface, name))
				continue
			}
			l.Search = append(l.Search, name)
		}
	}
	return l, errors.Join(errs...)
}

// Acquire6 brings iface up, waits for its link-local address and runs a
// stateful DHCPv6 exchange (Solicit, Advertise, Request, Reply) for one
// IA_NA address, within ctx and the bounds in opts. It does not apply the
// lease.
func Acquire6(ctx context.Context, iface string, opts Options) (*Lease6, error) {
	return exchange6(ctx, iface, opts, true)
}

// Inform6 brings iface up, waits for its link-local address and sends a
// DHCPv6 Information-Request for DNS servers and search domains only, as
// a stateless (RA-addressed) network expects.
func Inform6(ctx context.Context, iface string, opts Options) (*Lease6, error) {
	return exchange6(ctx, iface, opts, false)
}

func exchange6(ctx context.Context, iface string, opts Options, stateful bool) (*Lease6, error) {
	opts = opts.withDefaults()
	kind := "stateless"
	if stateful {
		kind = "stateful"
	}
	fail := func(step string, err error) error {
		return fmt.Errorf("dhcpv6 (%s) on %s: %s: %w", kind, iface, step, err)
	}
	link, err := netlink.LinkByName(iface)
	if err != nil {
		return nil, fail("find link", err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return nil, fail("set link up", err)
	}
	if err := waitLinkLocal(ctx, link, linkLocalTimeout); err != nil {
		return nil, fail("wait for a link-local address", err)
	}
	client, err := nclient6.New(iface, nclient6.WithTimeout(opts.Timeout), nclient6.WithRetry(opts.Retries))
	if err != nil {
		return nil, fail("open client", err)
	}
	defer client.Close()
	start := time.Now()
	var reply *dhcpv6.Message
	if stateful {
		mods := []dhcpv6.Modifier{dhcpv6.WithClientID(clientDUID(link.Attrs().HardwareAddr))}
		if opts.Hostname != "" {
			mods = append(mods, dhcpv6.WithFQDN(0, opts.Hostname))
		}
		adv, err := client.Solicit(ctx, mods...)
		if err != nil {
			return nil, fail("solicit", err)
		}
		reply, err = client.Request(ctx, adv, mods...)
		if err != nil {
			return nil, fail("request", err)
		}
	} else {
		req, err := informationRequest(client.InterfaceAddr())
		if err != nil {
			return nil, fail("build information-request", err)
		}
		reply, err = client.SendAndRead(ctx, nclient6.AllDHCPRelayAgentsAndServers, req,
			nclient6.IsMessageType(dhcpv6.MessageTypeReply))
		if err != nil {
			return nil, fail("information-request", err)
		}
	}
	lease, err := FromReply6(iface, reply, stateful)
	if lease == nil {
		return nil, err
	}
	opts.Log.Info("dhcpv6 lease", "interface", iface, "stateful", stateful, "address", lease.Address, "dns", lease.DNS, "duration", time.Since(start))
	return lease, err
}

// clientDUID is the DUID this client names itself by: DUID-LL, the NIC's
// MAC alone (RFC 8415 11.4), so that every exchange on a NIC, an apply run
// again or a boot after the last, is the same client to the server and
// gets its lease back. nclient6's default, DUID-LLT, carries the second
// it was made in and, with nothing stored between runs, would be a new
// client (and a second address) each time.
func clientDUID(hw net.HardwareAddr) dhcpv6.DUID {
	return &dhcpv6.DUIDLL{HWType: iana.HWTypeEthernet, LinkLayerAddr: hw}
}

// informationRequest builds an Information-Request (RFC 8415 18.2.6)
// asking for DNS servers and the search list; nclient6 has no helper.
func informationRequest(hw net.HardwareAddr) (*dhcpv6.Message, error) {
	msg, err := dhcpv6.NewMessage()
	if err != nil {
		return nil, err
	}
	msg.MessageType = dhcpv6.MessageTypeInformationRequest
	if len(hw) > 0 {
		msg.AddOption(dhcpv6.OptClientID(clientDUID(hw)))
	}
	msg.AddOption(dhcpv6.OptRequestedOption(dhcpv6.OptionDNSRecursiveNameServer, dhcpv6.OptionDomainSearchList))
	msg.AddOption(dhcpv6.OptElapsedTime(0))
	return msg, nil
}

// Apply configures the lease's address on its interface as a /128 with
// the lease's lifetimes, replacing what is there so that applying twice
// converges. A stateless lease has no address and Apply does nothing:
// its DNS goes to resolv.conf through ResolvConf.
func (l *Lease6) Apply() error {
	if !l.Address.IsValid() {
		return nil
	}
	link, err := netlink.LinkByName(l.Interface)
	if err != nil {
		return fmt.Errorf("apply dhcpv6 lease on %s: find link: %w", l.Interface, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("apply dhcpv6 lease on %s: set link up: %w", l.Interface, err)
	}
	addr := &netlink.Addr{IPNet: prefixToIPNet(netip.PrefixFrom(l.Address, 128))}
	addr.ValidLft, addr.PreferedLft = lifetimeSeconds(l.ValidLifetime), lifetimeSeconds(l.PreferredLifetime)
	if err := netlink.AddrReplace(link, addr); err != nil {
		return fmt.Errorf("apply dhcpv6 lease on %s: add address %s/128: %w", l.Interface, l.Address, err)
	}
	return nil
}

// lifetimeSeconds converts a DHCPv6 lifetime for netlink, where 0 means
// "leave unset" and 0xffffffff infinite.
func lifetimeSeconds(d time.Duration) int {
	s := int64(d / time.Second)
	if s <= 0 || s >= 0xffffffff {
		return 0
	}
	return int(s)
}

// Remove takes the lease's address off the interface again.
func (l *Lease6) Remove() error {
	if !l.Address.IsValid() {
		return nil
	}
	link, err := netlink.LinkByName(l.Interface)
	if err != nil {
		return fmt.Errorf("remove dhcpv6 lease on %s: find link: %w", l.Interface, err)
	}
	err = netlink.AddrDel(link, &netlink.Addr{IPNet: prefixToIPNet(netip.PrefixFrom(l.Address, 128))})
	if err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
		return fmt.Errorf("remove dhcpv6 lease on %s: delete address %s/128: %w", l.Interface, l.Address, err)
	}
	return nil
}

// ResolvConf renders the lease's DNS servers and search domains for
// /etc/resolv.conf, or nil when it has no DNS server.
func (l *Lease6) ResolvConf() []byte {
	if len(l.DNS) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("# Generated by seedinit from the DHCPv6 reply on " + l.Interface + "\n")
	for _, d := range l.DNS {
		b.WriteString("nameserver " + d.String() + "\n")
	}
	if len(l.Search) > 0 {
		b.WriteString("search " + strings.Join(l.Search, " ") + "\n")
	}
	return []byte(b.String())
}

// SetAcceptRA sets net.ipv6.conf.<iface>.accept_ra in the running
// kernel: 1 to accept router advertisements (SLAAC and the default
// route), 0 to ignore them, as the config's accept-ra asks. Set it before
// the link comes up: the router solicitation is sent only then.
func SetAcceptRA(iface string, accept bool) error {
	if strings.ContainsAny(iface, "/\x00") || iface == "" || iface == "." || iface == ".." {
		return fmt.Errorf("set accept_ra on %q: not an interface name", iface)
	}
	value := "0\n"
	if accept {
		value = "1\n"
	}
	path := "/proc/sys/net/ipv6/conf/" + iface + "/accept_ra"
	if current, err := os.ReadFile(path); err == nil && (strings.TrimSpace(string(current)) != "0") == accept {
		// 2 (accept even when forwarding) already accepts; keep it.
		return nil
	}
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("set accept_ra on %s: %w", iface, err)
	}
	return nil
}

// WaitSLAAC waits, within ctx and timeout (DefaultSLAACTimeout when zero),
// until iface has an address that stateless autoconfiguration made from a
// router advertisement and that passed duplicate address detection, and
// returns those addresses. Such an address is global, dynamic (not
// permanent) and not a /128, which tells it apart from static addresses
// and from DHCPv6 leases.
func WaitSLAAC(ctx context.Context, iface string, timeout time.Duration) ([]netip.Prefix, error) {
	if timeout <= 0 {
		timeout = DefaultSLAACTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var found []netip.Prefix
	err := poll(ctx, func() (bool, error) {
		link, err := netlink.LinkByName(iface)
		if err != nil {
			return false, err
		}
		addrs, err := nlink.Addrs(link, netlink.FAMILY_V6)
		if err != nil {
			return false, err
		}
		found = slaacAddresses(addrs)
		return len(found) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for SLAAC address on %s (%s): %w", iface, timeout, err)
	}
	return found, nil
}

func slaacAddresses(addrs []netlink.Addr) []netip.Prefix {
	var out []netip.Prefix
	for _, a := range addrs {
		p, ok := ipNetToPrefix(a.IPNet)
		if !ok || !p.Addr().Is6() || !p.Addr().IsGlobalUnicast() || p.Addr().IsLinkLocalUnicast() || p.Bits() == 128 {
			continue
		}
		if a.Flags&(unix.IFA_F_PERMANENT|unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) != 0 {
			continue
		}
		out = append(out, p)
	}
	return out
}

// waitLinkLocal waits until the link has a link-local IPv6 address that
// is no longer tentative: a socket cannot bind a tentative address.
func waitLinkLocal(ctx context.Context, link netlink.Link, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return poll(ctx, func() (bool, error) {
		addrs, err := nlink.Addrs(link, netlink.FAMILY_V6)
		if err != nil {
			return false, err
		}
		for _, a := range addrs {
			if a.IP.IsLinkLocalUnicast() && a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) == 0 {
				return true, nil
			}
		}
		return false, nil
	})
}

// poll calls done every 200ms until it reports true, fails, or ctx ends.
func poll(ctx context.Context, done func() (bool, error)) error {
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		ok, err := done()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

func ipNetToPrefix(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	addr, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(addr.Unmap(), ones), true
}
