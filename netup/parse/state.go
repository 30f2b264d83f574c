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
		where = fmt.Sprintf("%s (%s %s)", where, typ, pyfmt.Str(name))
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
		err = fmt.Errorf("unknown type %q", typ)
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

func nameOf(cmd map[string]any) (string, error) {
	switch v := cmd["name"].(type) {
	case string:
		if v == "" {
			return "", errors.New("empty \"name\"")
		}
		return v, nil
	case int64, float64:
		return pyfmt.Str(v), nil
	}
	return "", fmt.Errorf("key \"name\": expected a string, got a %s", yaml11.Kind(cmd["name"]))
}

// fixedKeys are the interface keys that handle_physical always rewrites,
// so a params entry of the same name never survives.
var fixedKeys = map[string]bool{
	"name": true, "type": true, "mac_address": true, "inet": true, "mode": true,
	"mtu": true, "address": true, "gateway": true, "subnets": true,
	"accept-ra": true, "wakeonlan": true,
}

func (in *interpreter) setParams(iface *model.Interface, params map[string]any) {
	for _, k := range orderedKeys(params, nil) {
		v := params[k]
		switch {
		case k == "driver":
			iface.Driver = pyfmt.Str(v)
		case fixedKeys[k]:
		default:
			iface.SetParam(k, paramValue(v))
		}
	}
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
	in.setParams(iface, params)

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
	iface.MACAddress = ""
	if mac, ok := cmd["mac_address"]; ok && mac != nil {
		iface.MACAddress = pyfmt.Str(mac)
	}
	iface.MTU = 0
	if mtu, ok := cmd["mtu"]; ok && yaml11.Truthy(mtu) {
		n, err := toInt(mtu)
		if err != nil {
			errs = append(errs, fmt.Errorf("key \"mtu\": %w", err))
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
		iface.VLANLink = pyfmt.Str(cmd["vlan_link"])
	}
	if cmd["vlan_id"] != nil {
		id, err := toInt(cmd["vlan_id"])
		if err != nil || id < 0 || id > 4094 {
			errs = append(errs, fmt.Errorf("key \"vlan_id\": %v is not a VLAN id (0-4094)", pyfmt.Str(cmd["vlan_id"])))
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
	members, err := scalarList(cmd["bond_interfaces"])
	if err != nil {
		return fmt.Errorf("key \"bond_interfaces\": %w", err)
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
		in.setParams(m, params)
	}
	return errors.Join(errs...)
}

func (in *interpreter) bridge(cmd map[string]any) error {
	if err := requireKeys(cmd, "name", "bridge_interfaces"); err != nil {
		return err
	}
	ports, err := scalarList(cmd["bridge_interfaces"])
	if err != nil {
		return fmt.Errorf("key \"bridge_interfaces\": %w", err)
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
				errs = append(errs, fmt.Errorf("params.bridge_stp: cannot convert %q to a boolean", pyfmt.Str(v)))
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
	return dns, nil
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
			in.fail(fmt.Errorf("%s: nameserver specified for interface %s, but interface %s does not exist", b.where, b.name, b.name))
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
	s.Type = typ
	str := func(key string) string {
		if v := m[key]; yaml11.Truthy(v) {
			return pyfmt.Str(v)
		}
		return ""
	}
	s.Gateway = str("gateway")
	s.Broadcast = str("broadcast")
	s.Pointopoint = str("pointopoint")
	s.Scope = str("scope")
	s.Control = str("control")
	s.IPv4 = yaml11.Truthy(m["ipv4"])
	s.IPv6 = yaml11.Truthy(m["ipv6"])
	var errs []error
	for _, key := range []string{"metric", "mtu"} {
		if v := m[key]; yaml11.Truthy(v) {
			n, err := toInt(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("key %q: %w", key, err))
				continue
			}
			if key == "metric" {
				s.Metric = n
			} else {
				s.MTU = n
			}
		}
	}
	if v := m["dns_nameservers"]; yaml11.Truthy(v) {
		if s.DNSNameservers, err = splitList(v); err != nil {
			errs = append(errs, fmt.Errorf("key \"dns_nameservers\": %w", err))
		}
	}
	if v := m["dns_search"]; yaml11.Truthy(v) {
		if s.DNSSearch, err = splitList(v); err != nil {
			errs = append(errs, fmt.Errorf("key \"dns_search\": %w", err))
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
		s.Address = pyfmt.Str(v)
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
	addr, maskPart, ipv6, err := model.ParseNetwork(address)
	if err != nil {
		return "", 0, "", err
	}
	switch {
	case strings.Contains(address, "/"):
		if ipv6 {
			pfx, err = model.IPv6MaskToPrefix(maskPart)
		} else {
			pfx, err = model.IPv4MaskToPrefix(maskPart)
		}
	case yaml11.Truthy(prefix):
		pfx, err = toInt(prefix)
		if err == nil && (pfx < 0 || (ipv6 && pfx > 128) || (!ipv6 && pfx > 32)) {
			err = fmt.Errorf("prefix %d out of range", pfx)
		}
	case yaml11.Truthy(netmask):
		if ipv6 {
			pfx, err = model.IPv6MaskToPrefix(pyfmt.Str(netmask))
		} else {
			pfx, err = model.IPv4MaskToPrefix(pyfmt.Str(netmask))
		}
	case ipv6:
		pfx = 64
	default:
		pfx = 24
	}
	if err != nil {
		return "", 0, "", err
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
		r.Gateway = pyfmt.Str(m["gateway"])
	}
	if present("metric") {
		n, err := toInt(m["metric"])
		if err != nil {
			return r, fmt.Errorf("key \"metric\": %w", err)
		}
		r.Metric = &n
	}
	return r, nil
}
