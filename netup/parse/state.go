package parse

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/pyfmt"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// interpreter builds a model.Network from v1 commands the way cloud-init's
// NetworkStateInterpreter does; the v2, ENI and network_data.json parsers
// translate their input into v1 commands first, as cloud-init does, so all
// inputs share one set of rules.
type interpreter struct {
	net *model.Network
	// ifaceDNS holds v1 nameservers bound to an interface, applied once
	// every interface is known.
	ifaceDNS []ifaceDNS
	// ifaceDNSAt is the index in ifaceDNS of each interface's binding.
	ifaceDNSAt map[string]int
	// macs maps a lowercase MAC to the name of the machine's NIC that has
	// it (cloud-init's get_interfaces_by_mac).
	macs map[string]string
	// byName indexes net.Interfaces: every command looks its interface
	// up, and a search of the list made parsing quadratic.
	byName map[string]*model.Interface
	errs   []error
}

type ifaceDNS struct {
	name  string
	where string
	dns   model.DNS
}

func newInterpreter(version int, macs map[string]string) *interpreter {
	lower := make(map[string]string, len(macs))
	for mac, name := range macs {
		lower[strings.ToLower(mac)] = name
	}
	return &interpreter{
		net:    &model.Network{Version: version, DNS: model.DNS{Nameservers: []string{}, Search: []string{}}},
		macs:   lower,
		byName: map[string]*model.Interface{},
	}
}

// find returns the interface called name, or nil.
func (in *interpreter) find(name string) *model.Interface { return in.byName[name] }

func (in *interpreter) fail(err error) { in.errs = append(in.errs, err) }

func (in *interpreter) result() (*model.Network, error) {
	return in.net, errors.Join(in.errs...)
}

// command runs one v1 config item. where names it in errors.
func (in *interpreter) command(cmd map[string]any, where string) {
	typ, ok := cmd["type"].(string)
	if !ok {
		in.fail(fmt.Errorf("%s: missing or non-string key \"type\"", where))
		return
	}
	if name, ok := cmd["name"]; ok {
		where = fmt.Sprintf("%s (%s %s)", where, label(typ), label(name))
	}
	var err error
	switch typ {
	case model.TypePhysical, model.TypeLoopback, model.TypeInfiniband:
		err = in.physical(cmd)
	case model.TypeBond:
		err = in.bond(cmd)
	case model.TypeBridge:
		err = in.bridge(cmd)
	case model.TypeVLAN:
		err = in.vlan(cmd)
	case "nameserver":
		err = in.nameserver(cmd, where)
	case "route":
		err = in.route(cmd)
	default:
		err = fmt.Errorf("unknown type %s", quoteValue(typ))
	}
	if err != nil {
		in.fail(fmt.Errorf("%s: %w", where, err))
	}
}

func requireKeys(cmd map[string]any, keys ...string) error {
	var missing []string
	for _, k := range keys {
		if _, ok := cmd[k]; !ok {
			missing = append(missing, strconv.Quote(k))
		}
	}
	if missing != nil {
		return fmt.Errorf("missing required key %s", strings.Join(missing, ", "))
	}
	return nil
}

// nameOf reads an item's interface name, which every renderer writes and
// net-convert makes part of file names.
func nameOf(cmd map[string]any) (string, error) {
	var name string
	switch v := cmd["name"].(type) {
	case string:
		if v == "" {
			return "", errors.New("empty \"name\"")
		}
		name = v
	case int64, float64:
		name = pyfmt.Str(v)
	default:
		return "", fmt.Errorf("key \"name\": expected a string, got a %s", yaml11.Kind(cmd["name"]))
	}
	if !checkIfaceName(name) {
		return "", invalid("name", name, wantIfaceName)
	}
	return name, nil
}

// ifaceNames reads a list of interface names (bond members, bridge
// ports).
func ifaceNames(key string, v any) ([]string, error) {
	names, err := scalarList(v)
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", key, err)
	}
	for i, name := range names {
		if !checkIfaceName(name) {
			return nil, invalid(fmt.Sprintf("%s[%d]", key, i), name, wantIfaceName)
		}
	}
	return names, nil
}

// fixedKeys are the interface keys that handle_physical always rewrites,
// so a params entry of the same name never survives.
var fixedKeys = map[string]bool{
	"name": true, "type": true, "mac_address": true, "inet": true, "mode": true,
	"mtu": true, "address": true, "gateway": true, "subnets": true,
	"accept-ra": true, "wakeonlan": true,
}

// setParams copies link parameters onto iface. A parameter becomes a
// line of its own in ENI and a word of sysconfig's BONDING_OPTS, so its
// name and value are checked first; nothing is set when one is invalid.
func (in *interpreter) setParams(iface *model.Interface, params map[string]any) error {
	keys := orderedKeys(params, nil)
	for _, k := range keys {
		v := params[k]
		switch {
		case k == "driver":
			if !checkDriver(pyfmt.Str(v)) {
				return fmt.Errorf("params: %w", invalid("driver", v, wantDriver))
			}
		case fixedKeys[k]:
		default:
			if err := checkParamKey(k); err != nil {
				return fmt.Errorf("params: %w", err)
			}
			if err := checkParamValue(k, paramValue(v)); err != nil {
				return fmt.Errorf("params: %w", err)
			}
		}
	}
	for _, k := range keys {
		v := params[k]
		switch {
		case k == "driver":
			iface.Driver = pyfmt.Str(v)
		case fixedKeys[k]:
		default:
			iface.SetParam(k, paramValue(v))
		}
	}
	return nil
}

func (in *interpreter) physical(cmd map[string]any) error {
	if err := requireKeys(cmd, "name"); err != nil {
		return err
	}
	name, err := nameOf(cmd)
	if err != nil {
		return err
	}
	iface := in.find(name)
	isNew := iface == nil
	if isNew {
		iface = &model.Interface{Name: name}
	}
	params, err := asMap(cmd["params"])
	if err != nil {
		return fmt.Errorf("key \"params\": %w", err)
	}
	mac := ""
	if v, ok := cmd["mac_address"]; ok && v != nil {
		mac = pyfmt.Str(v)
		if mac != "" && !checkMAC(mac) {
			return macError("mac_address", v)
		}
	}
	if err := in.setParams(iface, params); err != nil {
		return err
	}

	rawSubnets, err := asList(cmd["subnets"])
	if err != nil {
		return fmt.Errorf("key \"subnets\": %w", err)
	}
	var errs []error
	subnets := make([]model.Subnet, 0, len(rawSubnets))
	for i, raw := range rawSubnets {
		s, err := normalizeSubnet(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("subnets[%d]: %w", i, err))
			continue
		}
		subnets = append(subnets, s)
	}
	if !in.net.UseIPv6 {
		for _, s := range subnets {
			if strings.HasSuffix(s.Type, "6") || model.IsIPv6Address(s.Address) {
				in.net.UseIPv6 = true
				break
			}
		}
	}
	iface.Type, _ = cmd["type"].(string)
	iface.MACAddress = mac
	iface.MTU = 0
	if mtu, ok := cmd["mtu"]; ok && yaml11.Truthy(mtu) {
		n, err := checkMTU("mtu", mtu)
		if err != nil {
			errs = append(errs, err)
		} else {
			iface.MTU = n
		}
	}
	iface.Subnets = subnets
	iface.AcceptRA = optionalBool(cmd, "accept-ra")
	iface.WakeOnLAN = optionalBool(cmd, "wakeonlan")
	if isNew {
		in.net.Interfaces = append(in.net.Interfaces, iface)
		in.byName[name] = iface
	}
	return errors.Join(errs...)
}

func optionalBool(cmd map[string]any, key string) *bool {
	v, ok := cmd[key]
	if !ok || v == nil {
		return nil
	}
	b := isTrue(v)
	return &b
}

func (in *interpreter) vlan(cmd map[string]any) error {
	if err := requireKeys(cmd, "name", "vlan_id", "vlan_link"); err != nil {
		return err
	}
	var errs []error
	if err := in.physical(cmd); err != nil {
		errs = append(errs, err)
	}
	name, _ := nameOf(cmd)
	iface := in.find(name)
	if iface == nil {
		return errors.Join(errs...)
	}
	if cmd["vlan_link"] != nil {
		if link := pyfmt.Str(cmd["vlan_link"]); checkIfaceName(link) {
			iface.VLANLink = link
		} else {
			errs = append(errs, invalid("vlan_link", cmd["vlan_link"], wantIfaceName))
		}
	}
	if cmd["vlan_id"] != nil {
		id, err := toInt(cmd["vlan_id"])
		if err != nil || id < 0 || id > 4094 {
			errs = append(errs, invalid("vlan_id", cmd["vlan_id"], "not a VLAN id (0-4094)"))
		} else {
			iface.VLANID = id
		}
	}
	return errors.Join(errs...)
}

func (in *interpreter) bond(cmd map[string]any) error {
	if err := requireKeys(cmd, "name", "bond_interfaces", "params"); err != nil {
		return err
	}
	members, err := ifaceNames("bond_interfaces", cmd["bond_interfaces"])
	if err != nil {
		return err
	}
	params, err := asMap(cmd["params"])
	if err != nil {
		return fmt.Errorf("key \"params\": %w", err)
	}
	var errs []error
	if err := in.physical(cmd); err != nil {
		errs = append(errs, err)
	}
	name, _ := nameOf(cmd)
	bond := in.find(name)
	if bond == nil {
		return errors.Join(errs...)
	}
	bond.IsBondMaster = true
	for _, member := range members {
		if in.find(member) == nil {
			// cloud-init creates a placeholder typed "bond" for a member
			// that no item defines.
			if err := in.physical(map[string]any{"name": member, "type": model.TypeBond}); err != nil {
				errs = append(errs, fmt.Errorf("member %s: %w", member, err))
				continue
			}
		}
		m := in.find(member)
		m.BondMaster = name
		if err := in.setParams(m, params); err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", member, err))
		}
	}
	return errors.Join(errs...)
}

func (in *interpreter) bridge(cmd map[string]any) error {
	if err := requireKeys(cmd, "name", "bridge_interfaces"); err != nil {
		return err
	}
	ports, err := ifaceNames("bridge_interfaces", cmd["bridge_interfaces"])
	if err != nil {
		return err
	}
	var errs []error
	for _, port := range ports {
		if in.find(port) == nil {
			if err := in.physical(map[string]any{"name": port}); err != nil {
				errs = append(errs, fmt.Errorf("port %s: %w", port, err))
			}
		}
	}
	if err := in.physical(cmd); err != nil {
		errs = append(errs, err)
	}
	name, _ := nameOf(cmd)
	br := in.find(name)
	if br == nil {
		return errors.Join(errs...)
	}
	br.BridgePorts = ports
	if v, ok := br.Param("bridge_stp"); ok {
		if _, isBool := v.(bool); !isBool {
			switch pyfmt.Str(v) {
			case "on", "1":
				br.SetParam("bridge_stp", true)
			case "off", "0":
				br.SetParam("bridge_stp", false)
			default:
				errs = append(errs, fmt.Errorf("params: %w", invalid("bridge_stp", v, "not a boolean (on, off, 1, 0, true or false)")))
			}
		}
	}
	return errors.Join(errs...)
}

func parseDNS(cmd map[string]any) (model.DNS, error) {
	dns := model.DNS{Nameservers: []string{}, Search: []string{}}
	var err error
	if v, ok := cmd["address"]; ok {
		if dns.Nameservers, err = scalarList(v); err != nil {
			return dns, fmt.Errorf("key \"address\": %w", err)
		}
	}
	if v, ok := cmd["search"]; ok {
		if dns.Search, err = scalarList(v); err != nil {
			return dns, fmt.Errorf("key \"search\": %w", err)
		}
	}
	if dns.Nameservers == nil {
		dns.Nameservers = []string{}
	}
	if dns.Search == nil {
		dns.Search = []string{}
	}
	if err := checkNameservers("address", dns.Nameservers); err != nil {
		return dns, err
	}
	return dns, checkSearch("search", dns.Search)
}

// checkNameservers wants every resolver to be an IP address, which is all
// resolv.conf, networkd's DNS= and sysconfig's DNSn= take.
func checkNameservers(key string, servers []string) error {
	for i, ns := range servers {
		if !checkIP(ns) {
			return invalid(fmt.Sprintf("%s[%d]", key, i), ns, wantIP)
		}
	}
	return nil
}

// checkSearch wants every search domain to be a DNS name.
func checkSearch(key string, domains []string) error {
	for i, d := range domains {
		if !checkDomain(d) {
			return invalid(fmt.Sprintf("%s[%d]", key, i), d, wantDomain)
		}
	}
	return nil
}

func (in *interpreter) nameserver(cmd map[string]any, where string) error {
	if err := requireKeys(cmd, "address"); err != nil {
		return err
	}
	dns, err := parseDNS(cmd)
	if err != nil {
		return err
	}
	if name, ok := cmd["interface"]; ok {
		in.bindDNS(pyfmt.Str(name), where, dns)
		return nil
	}
	in.net.DNS.Nameservers = append(in.net.DNS.Nameservers, dns.Nameservers...)
	in.net.DNS.Search = append(in.net.DNS.Search, dns.Search...)
	return nil
}

// bindDNS records DNS for an interface; a later binding for the same
// interface replaces an earlier one, as a Python dict assignment does.
func (in *interpreter) bindDNS(name, where string, dns model.DNS) {
	if i, ok := in.ifaceDNSAt[name]; ok {
		in.ifaceDNS[i] = ifaceDNS{name: name, where: where, dns: dns}
		return
	}
	if in.ifaceDNSAt == nil {
		in.ifaceDNSAt = map[string]int{}
	}
	in.ifaceDNSAt[name] = len(in.ifaceDNS)
	in.ifaceDNS = append(in.ifaceDNS, ifaceDNS{name: name, where: where, dns: dns})
}

// finishV1 applies interface-bound nameservers once all interfaces exist.
func (in *interpreter) finishV1() {
	for _, b := range in.ifaceDNS {
		iface := in.find(b.name)
		if iface == nil {
			in.fail(fmt.Errorf("%s: nameserver specified for interface %s, but interface %s does not exist", b.where, label(b.name), label(b.name)))
			continue
		}
		dns := b.dns
		iface.DNS = &dns
	}
}

func (in *interpreter) route(cmd map[string]any) error {
	if err := requireKeys(cmd, "destination"); err != nil {
		return err
	}
	r, err := normalizeRoute(cmd)
	if err != nil {
		return err
	}
	in.net.Routes = append(in.net.Routes, r)
	return nil
}

// normalizeSubnet is cloud-init's _normalize_subnet: empty values are
// dropped, static addresses split into address and prefix, DNS lists
// split on whitespace, routes normalised.
func normalizeSubnet(raw any) (model.Subnet, error) {
	m, err := asMap(raw)
	if err != nil {
		return model.Subnet{}, err
	}
	var s model.Subnet
	typ, ok := m["type"].(string)
	if !ok || typ == "" {
		return s, errors.New("missing or non-string key \"type\"")
	}
	if !checkToken(typ) {
		return s, invalid("type", typ, wantToken)
	}
	s.Type = typ
	var errs []error
	// str reads an optional scalar that check must accept.
	str := func(key string, check func(string) bool, want string) string {
		v := m[key]
		if !yaml11.Truthy(v) {
			return ""
		}
		if s := pyfmt.Str(v); check(s) {
			return s
		}
		errs = append(errs, invalid(key, v, want))
		return ""
	}
	s.Gateway = str("gateway", checkIP, wantIP)
	s.Broadcast = str("broadcast", checkIP, wantIP)
	s.Pointopoint = str("pointopoint", checkIP, wantIP)
	s.Scope = str("scope", checkToken, wantToken)
	s.Control = str("control", checkToken, wantToken)
	s.IPv4 = yaml11.Truthy(m["ipv4"])
	s.IPv6 = yaml11.Truthy(m["ipv6"])
	if v := m["metric"]; yaml11.Truthy(v) {
		if s.Metric, err = checkMetric("metric", v); err != nil {
			errs = append(errs, err)
		}
	}
	if v := m["mtu"]; yaml11.Truthy(v) {
		if s.MTU, err = checkMTU("mtu", v); err != nil {
			errs = append(errs, err)
		}
	}
	if v := m["dns_nameservers"]; yaml11.Truthy(v) {
		if s.DNSNameservers, err = splitList(v); err != nil {
			errs = append(errs, fmt.Errorf("key \"dns_nameservers\": %w", err))
		} else if err := checkNameservers("dns_nameservers", s.DNSNameservers); err != nil {
			s.DNSNameservers = nil
			errs = append(errs, err)
		}
	}
	if v := m["dns_search"]; yaml11.Truthy(v) {
		if s.DNSSearch, err = splitList(v); err != nil {
			errs = append(errs, fmt.Errorf("key \"dns_search\": %w", err))
		} else if err := checkSearch("dns_search", s.DNSSearch); err != nil {
			s.DNSSearch = nil
			errs = append(errs, err)
		}
	}
	if typ == model.SubnetStatic || typ == model.SubnetStatic6 {
		addrKey := ""
		for _, k := range []string{"address", "ip_address"} {
			if yaml11.Truthy(m[k]) {
				addrKey = k
				break
			}
		}
		if addrKey == "" {
			return s, errors.New("no address: neither \"address\" nor \"ip_address\" is set")
		}
		addr, prefix, netmask, err := normalizeNet(pyfmt.Str(m[addrKey]), m["prefix"], m["netmask"])
		if err != nil {
			return s, fmt.Errorf("key %q: %w", addrKey, err)
		}
		s.Address, s.Prefix, s.Netmask = addr, prefix, netmask
	} else if v := m["address"]; yaml11.Truthy(v) {
		// Kept as given, as cloud-init keeps it, once it is known to be
		// an address with or without a prefix.
		if _, _, _, err := model.ParseNetwork(pyfmt.Str(v)); err != nil {
			errs = append(errs, invalid("address", v, "not an IP address or network"))
		} else {
			s.Address = pyfmt.Str(v)
		}
	}
	routes, err := asList(m["routes"])
	if err != nil {
		errs = append(errs, fmt.Errorf("key \"routes\": %w", err))
	}
	for i, raw := range routes {
		rm, err := asMap(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("routes[%d]: %w", i, err))
			continue
		}
		r, err := normalizeRoute(rm)
		if err != nil {
			errs = append(errs, fmt.Errorf("routes[%d]: %w", i, err))
			continue
		}
		s.Routes = append(s.Routes, r)
	}
	return s, errors.Join(errs...)
}

// normalizeNet is cloud-init's _normalize_net_keys: the prefix comes from
// "addr/prefix" (or "addr/netmask"), else from prefix, else from netmask,
// else 24 for IPv4 and 64 for IPv6. Zero prefix and netmask values count
// as absent, as in cloud-init.
func normalizeNet(address string, prefix, netmask any) (addr string, pfx int, mask string, err error) {
	const wantNet = "not an IP address with an optional /prefix or /netmask"
	addr, maskPart, ipv6, err := model.ParseNetwork(address)
	if err != nil {
		return "", 0, "", invalidf(address, wantNet)
	}
	maxPrefix := 32
	parseMask := model.IPv4MaskToPrefix
	if ipv6 {
		maxPrefix, parseMask = 128, model.IPv6MaskToPrefix
	}
	switch {
	case strings.Contains(address, "/"):
		if pfx, err = parseMask(maskPart); err != nil {
			return "", 0, "", invalidf(address, wantNet)
		}
	case yaml11.Truthy(prefix):
		pfx, err = toInt(prefix)
		if err != nil || pfx < 0 || pfx > maxPrefix {
			return "", 0, "", invalid("prefix", prefix, fmt.Sprintf("not a prefix length (0 to %d)", maxPrefix))
		}
	case yaml11.Truthy(netmask):
		if pfx, err = parseMask(pyfmt.Str(netmask)); err != nil {
			return "", 0, "", invalid("netmask", netmask, "not a netmask")
		}
	case ipv6:
		pfx = 64
	default:
		pfx = 24
	}
	if !ipv6 {
		mask = model.PrefixToIPv4Mask(pfx)
	}
	return addr, pfx, mask, nil
}

// normalizeRoute is cloud-init's _normalize_route.
func normalizeRoute(m map[string]any) (model.Route, error) {
	var r model.Route
	present := func(k string) bool {
		v, ok := m[k]
		return ok && v != nil && v != ""
	}
	dest := ""
	switch {
	case present("destination") && yaml11.Truthy(m["destination"]):
		dest = pyfmt.Str(m["destination"])
	case present("network") && yaml11.Truthy(m["network"]):
		dest = pyfmt.Str(m["network"])
	default:
		return r, errors.New("no destination: neither \"network\" nor \"destination\" is set")
	}
	addr, pfx, mask, err := normalizeNet(dest, m["prefix"], m["netmask"])
	if err != nil {
		return r, fmt.Errorf("destination: %w", err)
	}
	r.Network, r.Prefix, r.Netmask = addr, pfx, mask
	if present("gateway") {
		if r.Gateway = pyfmt.Str(m["gateway"]); !checkIP(r.Gateway) {
			return r, invalid("gateway", m["gateway"], wantIP)
		}
	}
	if present("metric") {
		n, err := checkMetric("metric", m["metric"])
		if err != nil {
			return r, err
		}
		r.Metric = &n
	}
	return r, nil
}
