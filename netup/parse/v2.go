package parse

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/pyfmt"
	"github.com/seedinit/seedinit/seed/yaml11"
)

func v2(m map[string]any, opts Options, order func(keys ...string) []string) (*model.Network, error) {
	in := newInterpreter(2, opts.MACs)
	in.net.V2 = m
	for _, section := range orderedKeys(m, order()) {
		if section == "version" || section == "renderer" {
			continue
		}
		devices, err := asMap(m[section])
		if err != nil {
			in.fail(fmt.Errorf("%s: %w", label(section), err))
			continue
		}
		names := orderedKeys(devices, order(section))
		switch section {
		case "ethernets":
			in.ethernets(devices, names)
		case "bonds":
			in.bondsOrBridges(devices, names, model.TypeBond)
		case "bridges":
			in.bondsOrBridges(devices, names, model.TypeBridge)
		case "vlans":
			in.vlans(devices, names)
		case "wifis":
			// cloud-init renders wifis only through netplan (passthrough).
			continue
		default:
			in.fail(fmt.Errorf("%s: unsupported section (want ethernets, bonds, bridges, vlans or wifis)", label(section)))
			continue
		}
		in.v2Nameservers(section, devices, names)
	}
	// The netplan renderer writes the document as it is, keys seedinit
	// never reads included. Checked last, so that a value seedinit reads
	// is reported for what it is not (a MAC, a name).
	if !errors.Is(errors.Join(in.errs...), ErrInvalidValue) {
		if err := checkNoControl("network", m); err != nil {
			in.fail(err)
		}
	}
	n, err := in.result()
	if err != nil {
		err = fmt.Errorf("parse network config v2: %w", err)
	}
	return refuse(n, err)
}

func (in *interpreter) device(section, name string, raw any) (map[string]any, bool) {
	cfg, err := asMap(raw)
	if err != nil {
		in.fail(fmt.Errorf("%s.%s: %w", section, label(name), err))
		return nil, false
	}
	return cfg, true
}

func (in *interpreter) ethernets(devices map[string]any, names []string) {
	for _, eth := range names {
		cfg, ok := in.device("ethernets", eth, devices[eth])
		if !ok {
			continue
		}
		where := "ethernets." + label(eth)
		if err := checkV2Device(cfg); err != nil {
			in.fail(fmt.Errorf("%s: %w", where, err))
			continue
		}
		match, err := asMap(cfg["match"])
		if err != nil {
			in.fail(fmt.Errorf("%s: key \"match\": %w", where, err))
			continue
		}
		cmd := map[string]any{"type": model.TypePhysical}
		mac := ""
		if v := match["macaddress"]; yaml11.Truthy(v) {
			mac = pyfmt.Str(v)
			cmd["mac_address"] = mac
		}
		name := eth
		if setName := cfg["set-name"]; yaml11.Truthy(setName) {
			name = pyfmt.Str(setName)
		} else if mac != "" {
			if found, ok := in.macs[strings.ToLower(mac)]; ok {
				name = found
			}
		}
		cmd["name"] = name
		if driver := match["driver"]; yaml11.Truthy(driver) {
			cmd["params"] = map[string]any{"driver": driver}
		}
		for _, key := range []string{"mtu", "wakeonlan", "accept-ra"} {
			if v, ok := cfg[key]; ok {
				cmd[key] = v
			}
		}
		subnets, err := v2Subnets(cfg)
		if err != nil {
			in.fail(fmt.Errorf("%s: %w", where, err))
		}
		if len(subnets) > 0 {
			cmd["subnets"] = subnets
		}
		if err := in.physical(cmd); err != nil {
			in.fail(fmt.Errorf("%s: %w", where, err))
		}
		in.noteIPv6(cfg)
	}
}

// noteIPv6 marks the network as using IPv6 when a device asks for DHCPv6,
// which cloud-init notes while converting the device.
func (in *interpreter) noteIPv6(cfg map[string]any) {
	if yaml11.Truthy(cfg["dhcp6"]) {
		in.net.UseIPv6 = true
	}
}

func (in *interpreter) vlans(devices map[string]any, names []string) {
	for _, name := range names {
		cfg, ok := in.device("vlans", name, devices[name])
		if !ok {
			continue
		}
		where := "vlans." + label(name)
		if err := checkV2Device(cfg); err != nil {
			in.fail(fmt.Errorf("%s: %w", where, err))
			continue
		}
		cmd := map[string]any{
			"type":      model.TypeVLAN,
			"name":      name,
			"vlan_id":   cfg["id"],
			"vlan_link": cfg["link"],
		}
		if v, ok := cfg["mtu"]; ok {
			cmd["mtu"] = v
		}
		subnets, err := v2Subnets(cfg)
		if err != nil {
			in.fail(fmt.Errorf("%s: %w", where, err))
		}
		if len(subnets) > 0 {
			cmd["subnets"] = subnets
		}
		if err := in.vlan(cmd); err != nil {
			in.fail(fmt.Errorf("%s: %w", where, err))
		}
		in.noteIPv6(cfg)
	}
}

func (in *interpreter) bondsOrBridges(devices map[string]any, names []string, typ string) {
	section, table := "bonds", model.BondParamsV2
	if typ == model.TypeBridge {
		section, table = "bridges", model.BridgeParamsV2
	}
	for _, name := range names {
		cfg, ok := in.device(section, name, devices[name])
		if !ok {
			continue
		}
		where := section + "." + label(name)
		if err := checkV2Device(cfg); err != nil {
			in.fail(fmt.Errorf("%s: %w", where, err))
			continue
		}
		params, err := asMap(cfg["parameters"])
		if err != nil {
			in.fail(fmt.Errorf("%s: key \"parameters\": %w", where, err))
			params = map[string]any{}
		}
		v1Params := map[string]any{}
		for _, k := range orderedKeys(params, nil) {
			v := params[k]
			// netplan accepts both spellings; cloud-init keeps the right one.
			if k == "gratuitious-arp" {
				if !yaml11.Truthy(v) {
					continue
				}
				k = "gratuitous-arp"
			}
			v1Key, ok := model.V1Param(table, k)
			if !ok {
				in.fail(fmt.Errorf("%s: parameters: unknown %s parameter %s", where, typ, quoteValue(k)))
				continue
			}
			v1Params[v1Key] = v
		}
		if cfg["interfaces"] == nil {
			in.fail(fmt.Errorf("%s: missing key \"interfaces\"", where))
			continue
		}
		cmd := map[string]any{
			"type":              typ,
			"name":              name,
			typ + "_interfaces": cfg["interfaces"],
			"params":            v1Params,
		}
		if v, ok := cfg["mtu"]; ok {
			cmd["mtu"] = v
		}
		subnets, err := v2Subnets(cfg)
		if err != nil {
			in.fail(fmt.Errorf("%s: %w", where, err))
		}
		if len(subnets) > 0 {
			cmd["subnets"] = subnets
		}
		if typ == model.TypeBond {
			err = in.bond(cmd)
		} else {
			err = in.bridge(cmd)
		}
		if err != nil {
			in.fail(fmt.Errorf("%s: %w", where, err))
		}
		in.noteIPv6(cfg)
	}
}

// v2Subnets is cloud-init's _v2_to_v1_ipcfg: DHCP first, then one static
// subnet per address, the first IPv4 (IPv6) address taking gateway4
// (gateway6) and the first address taking the nameservers; routes hang
// off the first subnet, because v1 has no interface-level routes.
func v2Subnets(cfg map[string]any) ([]any, error) {
	var subnets []any
	var errs []error
	for _, fam := range []string{"4", "6"} {
		if !yaml11.Truthy(cfg["dhcp"+fam]) {
			continue
		}
		s := map[string]any{"type": "dhcp" + fam}
		overrides, err := asMap(cfg["dhcp"+fam+"-overrides"])
		if err != nil {
			errs = append(errs, fmt.Errorf("key %q: %w", "dhcp"+fam+"-overrides", err))
		} else if v, ok := overrides["route-metric"]; ok {
			s["metric"] = v
		}
		subnets = append(subnets, s)
	}
	addresses, err := asList(cfg["addresses"])
	if err != nil {
		errs = append(errs, fmt.Errorf("key \"addresses\": %w", err))
	}
	nsCfg, err := asMap(cfg["nameservers"])
	if err != nil {
		errs = append(errs, fmt.Errorf("key \"nameservers\": %w", err))
		nsCfg = map[string]any{}
	}
	_, hasNS := cfg["nameservers"]
	gw4Used, gw6Used := false, false
	nameservers := map[string]any{}
	for i, raw := range addresses {
		addr, ok := raw.(string)
		if !ok {
			errs = append(errs, fmt.Errorf("addresses[%d]: expected a string, got a %s", i, yaml11.Kind(raw)))
			continue
		}
		s := map[string]any{"type": "static", "address": addr}
		if strings.Contains(addr, ":") {
			if gw, ok := cfg["gateway6"]; ok && !gw6Used {
				gw6Used = true
				s["gateway"] = gw
			}
		} else if gw, ok := cfg["gateway4"]; ok && !gw4Used {
			gw4Used = true
			s["gateway"] = gw
		}
		if hasNS && len(nameservers) == 0 {
			if v := nsCfg["addresses"]; yaml11.Truthy(v) {
				nameservers["dns_nameservers"] = v
			}
			if v := nsCfg["search"]; yaml11.Truthy(v) {
				nameservers["dns_search"] = v
			}
			for k, v := range nameservers {
				s[k] = v
			}
		}
		subnets = append(subnets, s)
	}
	rawRoutes, err := asList(cfg["routes"])
	if err != nil {
		errs = append(errs, fmt.Errorf("key \"routes\": %w", err))
	}
	var routes []any
	for i, raw := range rawRoutes {
		r, err := asMap(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("routes[%d]: %w", i, err))
			continue
		}
		routes = append(routes, map[string]any{"destination": r["to"], "gateway": r["via"]})
	}
	if len(subnets) > 0 && len(routes) > 0 {
		subnets[0].(map[string]any)["routes"] = routes
	}
	return subnets, errors.Join(errs...)
}

// v2Nameservers is cloud-init's _v2_common: every device's nameservers go
// into the global DNS and onto the device itself. Like cloud-init, it
// stops at the first device whose nameservers have no addresses.
func (in *interpreter) v2Nameservers(section string, devices map[string]any, names []string) {
	for _, key := range names {
		cfg, ok := devices[key].(map[string]any)
		if !ok || checkV2Device(cfg) != nil {
			continue // reported with the device
		}
		name := key
		if v := cfg["set-name"]; yaml11.Truthy(v) {
			name = pyfmt.Str(v)
		}
		raw, ok := cfg["nameservers"]
		if !ok {
			continue
		}
		where := section + "." + label(key)
		nsCfg, err := asMap(raw)
		if err != nil {
			continue // reported with the device's addresses
		}
		cmd := map[string]any{"type": "nameserver"}
		if search, err := scalarList(nsCfg["search"]); err == nil && len(search) > 0 {
			cmd["search"] = nsCfg["search"]
		}
		if addrs, err := scalarList(nsCfg["addresses"]); err == nil && len(addrs) > 0 {
			cmd["address"] = nsCfg["addresses"]
		}
		if _, ok := cmd["address"]; !ok {
			in.fail(fmt.Errorf("%s: nameservers: missing \"addresses\" (cloud-init then ignores the nameservers of this and the following %s)", where, section))
			return
		}
		if err := in.nameserver(cmd, where); err != nil {
			in.fail(fmt.Errorf("%s: nameservers: %w", where, err))
			return
		}
		// cloud-init looks the MAC's current name up even when set-name
		// gives the interface another, and then finds no such interface:
		// PID 1 parses before the rename, so a set-name with nameservers
		// would fail every boot. The name the config gives wins.
		if match, ok := cfg["match"].(map[string]any); ok && !yaml11.Truthy(cfg["set-name"]) {
			if mac := match["macaddress"]; yaml11.Truthy(mac) {
				if found, ok := in.macs[strings.ToLower(pyfmt.Str(mac))]; ok {
					name = found
				}
			}
		}
		iface := in.find(name)
		if iface == nil {
			in.fail(fmt.Errorf("%s: nameservers: no interface %s", where, label(name)))
			continue
		}
		dns, _ := parseDNS(cmd)
		iface.DNS = &dns
	}
}

// dhcpOverrideBools are the v2 DHCP overrides networkd's renderer writes
// as they are (UseDNS=, UseDomains=, ...): netplan takes a boolean, and
// use-domains also "route".
var dhcpOverrideBools = []string{"use-dns", "use-domains", "use-hostname", "use-ntp", "send-hostname", "use-mtu", "use-routes"}

// checkV2Device checks the values of a v2 device under their v2 names,
// before they become v1 commands (whose own checks would name the keys
// differently), and those that reach the rendered files without passing
// through a command at all: the MAC a device is given (macaddress) and
// the DHCP overrides the networkd renderer reads from the document.
func checkV2Device(cfg map[string]any) error {
	if match, ok := cfg["match"].(map[string]any); ok {
		if v := match["macaddress"]; yaml11.Truthy(v) && !checkMAC(pyfmt.Str(v)) {
			return fmt.Errorf("match: %w", macError("macaddress", v))
		}
		if v := match["driver"]; yaml11.Truthy(v) && !checkDriver(pyfmt.Str(v)) {
			return fmt.Errorf("match: %w", invalid("driver", v, wantDriver))
		}
	}
	if v := cfg["set-name"]; yaml11.Truthy(v) && !checkIfaceName(pyfmt.Str(v)) {
		return invalid("set-name", v, wantIfaceName)
	}
	if v, ok := cfg["macaddress"]; ok && v != nil && !checkMAC(pyfmt.Str(v)) {
		return macError("macaddress", v)
	}
	if v, ok := cfg["link"]; ok && v != nil && !checkIfaceName(pyfmt.Str(v)) {
		return invalid("link", v, wantIfaceName)
	}
	if v, ok := cfg["mtu"]; ok && yaml11.Truthy(v) {
		if _, err := checkMTU("mtu", v); err != nil {
			return err
		}
	}
	if v, ok := cfg["id"]; ok && v != nil {
		if id, err := toInt(v); err != nil || id < 0 || id > 4094 {
			return invalid("id", v, "not a VLAN id (0-4094)")
		}
	}
	if list, ok := cfg["interfaces"].([]any); ok {
		for i, v := range list {
			if !checkIfaceName(pyfmt.Str(v)) {
				return invalid(fmt.Sprintf("interfaces[%d]", i), v, wantIfaceName)
			}
		}
	}
	if list, ok := cfg["addresses"].([]any); ok {
		for i, v := range list {
			if s, ok := v.(string); ok {
				if _, _, _, err := model.ParseNetwork(s); err != nil {
					return invalid(fmt.Sprintf("addresses[%d]", i), s, "not an IP address with an optional /prefix")
				}
			}
		}
	}
	for _, key := range []string{"gateway4", "gateway6"} {
		if v, ok := cfg[key]; ok && v != nil && !checkIP(pyfmt.Str(v)) {
			return invalid(key, v, wantIP)
		}
	}
	if ns, ok := cfg["nameservers"].(map[string]any); ok {
		if list, err := scalarList(ns["addresses"]); err == nil {
			if err := checkNameservers("nameservers.addresses", list); err != nil {
				return err
			}
		}
		if list, err := scalarList(ns["search"]); err == nil {
			if err := checkSearch("nameservers.search", list); err != nil {
				return err
			}
		}
	}
	if routes, ok := cfg["routes"].([]any); ok {
		for i, raw := range routes {
			r, ok := raw.(map[string]any)
			if !ok {
				continue
			}
			if v, ok := r["via"]; ok && v != nil && !checkIP(pyfmt.Str(v)) {
				return invalid(fmt.Sprintf("routes[%d].via", i), v, wantIP)
			}
			if v, ok := r["metric"]; ok {
				if _, err := checkMetric(fmt.Sprintf("routes[%d].metric", i), v); err != nil {
					return err
				}
			}
		}
	}
	for _, fam := range []string{"dhcp4-overrides", "dhcp6-overrides"} {
		overrides, ok := cfg[fam].(map[string]any)
		if !ok {
			continue
		}
		for _, key := range dhcpOverrideBools {
			v, ok := overrides[key]
			if !ok {
				continue
			}
			if _, isBool := v.(bool); !isBool && !checkToken(pyfmt.Str(v)) {
				return fmt.Errorf("%s: %w", fam, invalid(key, v, "not a boolean"))
			}
		}
		if v, ok := overrides["hostname"]; ok && !checkDomain(pyfmt.Str(v)) {
			return fmt.Errorf("%s: %w", fam, invalid("hostname", v, "not a host name (labels of A-Z a-z 0-9, - and _, separated by dots)"))
		}
		if v, ok := overrides["route-metric"]; ok {
			if _, err := checkMetric("route-metric", v); err != nil {
				return fmt.Errorf("%s: %w", fam, err)
			}
		}
	}
	return nil
}
