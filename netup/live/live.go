// Package live applies a network model to the running machine with
// netlink (renames by MAC, bonds, bridges, VLANs, MTU, static addresses
// and routes, DHCPv4, DHCPv6 and SLAAC where asked), and brings up an
// ephemeral network for PID 1 to reach network datasources.
package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/internal/safego"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/link"
	"github.com/seedinit/seedinit/netup/model"
)

// Options tune Apply and BringUp.
type Options struct {
	DHCP dhcp.Options
	Log  *slog.Logger
	// SysClassNet is where NICs are discovered; link.SysClassNet when empty.
	SysClassNet string
	// Rules are extra renames (seedinit's own config) done after the
	// network config's own.
	Rules []link.Rule
	// SLAACTimeout bounds the wait for an address from router
	// advertisements; dhcp.DefaultSLAACTimeout when zero.
	SLAACTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.DHCP.Log == nil {
		o.DHCP.Log = o.Log
	}
	if o.SysClassNet == "" {
		o.SysClassNet = link.SysClassNet
	}
	return o
}

// Result is what Apply or BringUp did.
type Result struct {
	Renamed []link.Renamed
	// DHCP names the interfaces the config runs DHCPv4 on, leased or not.
	DHCP   []string
	Leases []*dhcp.Lease
	// Leases6 are the DHCPv6 replies, stateful (with an address) and
	// stateless (DNS only).
	Leases6 []*dhcp.Lease6
	// SLAAC are the addresses router advertisements gave, per interface.
	SLAAC map[string][]netip.Prefix
	// ResolvConf is /etc/resolv.conf contents for what was configured
	// (the config's DNS, else the first lease's), nil when there is no
	// DNS server; the caller writes it where it belongs.
	ResolvConf []byte
}

// Apply configures n on the running machine: renames NICs by MAC, creates
// bonds, VLANs and bridges, sets MTUs, brings links up, adds static
// addresses and routes, and runs DHCPv4 (in parallel, within ctx) on
// interfaces with a dhcp or dhcp4 subnet; at the same time it runs
// DHCPv6 and waits for SLAAC where the subnets ask (see ipv6Plan).
// Everything it does replaces what is there, so applying twice converges.
// One item that fails is reported in the error and the rest are still
// applied.
func Apply(ctx context.Context, n *model.Network, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	res := &Result{}
	if n == nil {
		return res, nil
	}
	var errs []error
	renamed, err := link.Rename(append(link.RulesFromNetwork(n), opts.Rules...))
	res.Renamed = renamed
	if err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, createVirtual(n)...)

	var dhcpIfaces []string
	var plans []ipv6Plan
	for _, iface := range n.Interfaces {
		if iface.Type == model.TypeLoopback || iface.Name == "lo" {
			continue
		}
		plan, err := prepareIPv6(iface)
		errs = append(errs, err...)
		if plan.wanted() {
			plans = append(plans, plan)
		}
		wantsDHCP, err := configure(iface)
		errs = append(errs, err...)
		if wantsDHCP {
			dhcpIfaces = append(dhcpIfaces, iface.Name)
		}
	}
	for i, r := range n.Routes {
		if err := addRoute(nil, r); err != nil {
			errs = append(errs, fmt.Errorf("apply route %d (%s/%d): %w", i, r.Network, r.Prefix, err))
		}
	}

	var v6 ipv6Outcome
	var v6Done sync.WaitGroup
	v6Done.Add(1)
	safego.Go("ipv6", func() {
		defer v6Done.Done()
		v6 = runIPv6(ctx, plans, opts)
	}, func(err error) { v6.errs = append(v6.errs, err) })
	res.DHCP = dhcpIfaces
	leases, dhcpErrs := acquireAll(ctx, dhcpIfaces, opts.DHCP)
	errs = append(errs, dhcpErrs...)
	for _, l := range leases {
		if err := l.Apply(); err != nil {
			errs = append(errs, err)
		}
	}
	v6Done.Wait()
	errs = append(errs, v6.errs...)
	res.Leases = leases
	res.Leases6 = v6.leases
	res.SLAAC = v6.slaac
	res.ResolvConf = resolvConf(n, leases, v6.leases)
	return res, errors.Join(errs...)
}

// acquireAll runs DHCPv4 on every interface at once and keeps every lease.
func acquireAll(ctx context.Context, ifaces []string, opts dhcp.Options) ([]*dhcp.Lease, []error) {
	leases := make([]*dhcp.Lease, len(ifaces))
	errs := make([]error, len(ifaces))
	var wg sync.WaitGroup
	for i, name := range ifaces {
		wg.Add(1)
		safego.Go("dhcp on "+name, func() {
			defer wg.Done()
			leases[i], errs[i] = dhcp.Acquire(ctx, name, opts)
		}, func(err error) { errs[i] = err })
	}
	wg.Wait()
	var got []*dhcp.Lease
	for _, l := range leases {
		if l != nil {
			got = append(got, l)
		}
	}
	return got, errs
}

// createVirtual creates bonds, VLANs and bridges, as many rounds as it
// takes for links stacked on each other (a VLAN on a bond, a bridge over
// a VLAN) to find their lower links.
func createVirtual(n *model.Network) []error {
	pending := map[string]*model.Interface{}
	for _, iface := range n.Interfaces {
		if iface.IsBondMaster || iface.Type == model.TypeBond || iface.Type == model.TypeBridge || iface.Type == model.TypeVLAN {
			pending[iface.Name] = iface
		}
	}
	var errs []error
	for len(pending) > 0 {
		progress := false
		for _, iface := range n.Interfaces {
			if pending[iface.Name] == nil || !lowerReady(n, iface, pending) {
				continue
			}
			delete(pending, iface.Name)
			progress = true
			if err := createLink(n, iface); err != nil {
				errs = append(errs, fmt.Errorf("create %s %s: %w", iface.Type, iface.Name, err))
			}
		}
		if !progress {
			for name := range pending {
				errs = append(errs, fmt.Errorf("create %s: its lower links form a loop or are missing", name))
			}
			break
		}
	}
	return errs
}

func lowerReady(n *model.Network, iface *model.Interface, pending map[string]*model.Interface) bool {
	var lower []string
	switch {
	case iface.Type == model.TypeVLAN:
		lower = []string{iface.VLANLink}
	case iface.Type == model.TypeBridge:
		lower = iface.BridgePorts
	default:
		lower = n.BondMembers(iface.Name)
	}
	for _, l := range lower {
		if pending[l] != nil {
			return false
		}
	}
	return true
}

func createLink(n *model.Network, iface *model.Interface) error {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = iface.Name
	if iface.MTU > 0 {
		attrs.MTU = iface.MTU
	}
	if iface.MACAddress != "" {
		if hw, err := net.ParseMAC(iface.MACAddress); err == nil {
			attrs.HardwareAddr = hw
		}
	}
	existing, _ := netlink.LinkByName(iface.Name)
	switch {
	case iface.Type == model.TypeVLAN:
		parent, err := netlink.LinkByName(iface.VLANLink)
		if err != nil {
			return fmt.Errorf("find vlan-raw-device %s: %w", iface.VLANLink, err)
		}
		if existing != nil {
			return nil
		}
		attrs.ParentIndex = parent.Attrs().Index
		return netlink.LinkAdd(&netlink.Vlan{LinkAttrs: attrs, VlanId: iface.VLANID})
	case iface.Type == model.TypeBridge:
		if existing == nil {
			// Bridge options (STP, forward delay) are left to the
			// rendered config; the live bridge only has to pass traffic
			// until the OS takes over.
			br := &netlink.Bridge{LinkAttrs: attrs}
			if err := netlink.LinkAdd(br); err != nil {
				return err
			}
			existing = br
		}
		var errs []error
		for _, port := range iface.BridgePorts {
			l, err := netlink.LinkByName(port)
			if err == nil {
				err = netlink.LinkSetMaster(l, existing)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("add port %s: %w", port, err))
			}
		}
		return errors.Join(errs...)
	default:
		if existing == nil {
			bond := netlink.NewLinkBond(attrs)
			bond.Mode = bondMode(iface)
			if v, ok := param(iface, "miimon"); ok {
				if ms, err := strconv.Atoi(v); err == nil {
					bond.Miimon = ms
				}
			}
			if err := netlink.LinkAdd(bond); err != nil {
				return err
			}
			l, err := netlink.LinkByName(iface.Name)
			if err != nil {
				return err
			}
			existing = l
		}
		var errs []error
		for _, member := range n.BondMembers(iface.Name) {
			l, err := netlink.LinkByName(member)
			if err != nil {
				errs = append(errs, fmt.Errorf("enslave %s: %w", member, err))
				continue
			}
			if l.Attrs().MasterIndex == existing.Attrs().Index {
				continue
			}
			// The kernel only enslaves a link that is down.
			if err := netlink.LinkSetDown(l); err == nil {
				err = netlink.LinkSetMasterByIndex(l, existing.Attrs().Index)
				if err != nil {
					errs = append(errs, fmt.Errorf("enslave %s: %w", member, err))
				}
			}
		}
		return errors.Join(errs...)
	}
}

// param reads a bond option however the input spelled it.
func param(iface *model.Interface, name string) (string, bool) {
	for _, key := range []string{"bond-" + name, "bond_" + name} {
		if v, ok := iface.Param(key); ok {
			return fmt.Sprint(v), true
		}
	}
	return "", false
}

func bondMode(iface *model.Interface) netlink.BondMode {
	v, ok := param(iface, "mode")
	if !ok {
		return netlink.BOND_MODE_BALANCE_RR
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 && n <= 6 {
		return netlink.BondMode(n)
	}
	return netlink.StringToBondMode(strings.ToLower(v))
}

// configure sets an interface's MTU, brings it up and adds its static
// addresses and routes; it reports whether a subnet asks for DHCPv4.
func configure(iface *model.Interface) (wantsDHCP bool, errs []error) {
	l, err := netlink.LinkByName(iface.Name)
	if err != nil {
		return false, []error{fmt.Errorf("configure %s: find link: %w", iface.Name, err)}
	}
	mtu := iface.MTU
	for _, s := range iface.Subnets {
		if s.MTU > 0 && !s.IsIPv6() {
			mtu = s.MTU
		}
	}
	if mtu > 0 && l.Attrs().MTU != mtu {
		if err := netlink.LinkSetMTU(l, mtu); err != nil {
			errs = append(errs, fmt.Errorf("configure %s: set MTU %d: %w", iface.Name, mtu, err))
		}
	}
	if iface.BondMaster != "" {
		// A bond member is brought up by its bond; it carries no address.
		if err := netlink.LinkSetUp(l); err != nil {
			errs = append(errs, fmt.Errorf("configure %s: set link up: %w", iface.Name, err))
		}
		return false, errs
	}
	if err := netlink.LinkSetUp(l); err != nil {
		errs = append(errs, fmt.Errorf("configure %s: set link up: %w", iface.Name, err))
	}
	for i, s := range iface.Subnets {
		where := fmt.Sprintf("configure %s subnet %d (%s)", iface.Name, i, s.Type)
		switch s.Type {
		case model.SubnetDHCP, model.SubnetDHCP4:
			wantsDHCP = true
		case model.SubnetStatic, model.SubnetStatic6:
			prefix, err := subnetPrefix(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			addr := &netlink.Addr{IPNet: toIPNet(prefix)}
			if err := netlink.AddrReplace(l, addr); err != nil {
				errs = append(errs, fmt.Errorf("%s: add address %s: %w", where, prefix, err))
				continue
			}
			if s.Gateway != "" {
				def := model.Route{Network: "0.0.0.0", Prefix: 0, Gateway: s.Gateway}
				if prefix.Addr().Is6() {
					def.Network = "::"
				}
				if err := addRoute(l, def); err != nil {
					errs = append(errs, fmt.Errorf("%s: add default route via %s: %w", where, s.Gateway, err))
				}
			}
		}
		for j, r := range s.Routes {
			if err := addRoute(l, r); err != nil {
				errs = append(errs, fmt.Errorf("%s: route %d (%s/%d): %w", where, j, r.Network, r.Prefix, err))
			}
		}
	}
	return wantsDHCP, errs
}

func subnetPrefix(s model.Subnet) (netip.Prefix, error) {
	addr := s.Address
	if i := strings.IndexByte(addr, '/'); i >= 0 {
		p, err := netip.ParsePrefix(addr)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("parse address %q: %w", addr, err)
		}
		return p, nil
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("parse address %q: %w", addr, err)
	}
	bits := s.Prefix
	if bits == 0 {
		bits = a.BitLen()
		if s.Netmask != "" {
			if m := net.ParseIP(s.Netmask); m != nil {
				bits, _ = net.IPMask(m.To4()).Size()
			}
		}
	}
	return netip.PrefixFrom(a, bits), nil
}

// addRoute replaces a route through a gateway; l may be nil for a global
// route, whose link the kernel finds from the gateway.
func addRoute(l netlink.Link, r model.Route) error {
	dst, err := netip.ParseAddr(r.Network)
	if err != nil {
		return fmt.Errorf("parse network %q: %w", r.Network, err)
	}
	route := &netlink.Route{Dst: toIPNet(netip.PrefixFrom(dst, r.Prefix).Masked())}
	if l != nil {
		route.LinkIndex = l.Attrs().Index
	}
	if r.Gateway != "" {
		gw, err := netip.ParseAddr(r.Gateway)
		if err != nil {
			return fmt.Errorf("parse gateway %q: %w", r.Gateway, err)
		}
		if !gw.IsUnspecified() {
			route.Gw = net.IP(gw.AsSlice())
		}
	}
	if route.Gw == nil {
		route.Scope = netlink.SCOPE_LINK
	}
	if r.Metric != nil {
		route.Priority = *r.Metric
	}
	return netlink.RouteReplace(route)
}

func toIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// resolvConf merges the config's DNS (global, then per interface) with
// the leases' when the config names none.
func resolvConf(n *model.Network, leases []*dhcp.Lease, leases6 []*dhcp.Lease6) []byte {
	var servers, search []string
	seen := map[string]bool{}
	add := func(list *[]string, vals ...string) {
		for _, v := range vals {
			if v != "" && !seen[v] {
				seen[v] = true
				*list = append(*list, v)
			}
		}
	}
	if n != nil {
		add(&servers, n.DNS.Nameservers...)
		add(&search, n.DNS.Search...)
		for _, iface := range n.Interfaces {
			if iface.DNS != nil {
				add(&servers, iface.DNS.Nameservers...)
				add(&search, iface.DNS.Search...)
			}
			for _, s := range iface.Subnets {
				add(&servers, s.DNSNameservers...)
				add(&search, s.DNSSearch...)
			}
		}
	}
	if len(servers) == 0 {
		for _, l := range leases {
			if b := l.ResolvConf(); b != nil {
				return b
			}
		}
		for _, l := range leases6 {
			if b := l.ResolvConf(); b != nil {
				return b
			}
		}
		return nil
	}
	var b strings.Builder
	b.WriteString("# Generated by seedinit from the instance's network configuration\n")
	for _, s := range servers {
		b.WriteString("nameserver " + s + "\n")
	}
	if len(search) > 0 {
		b.WriteString("search " + strings.Join(search, " ") + "\n")
	}
	return []byte(b.String())
}
