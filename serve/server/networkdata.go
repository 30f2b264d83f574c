package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
)

// networkDataJSON writes an instance's network config (cloud-init's v2)
// as OpenStack's network_data.json, for the OpenStack layout: a link per
// ethernet, matched by its MAC (network_data.json names NICs by MAC
// only), a network per DHCP family and per static address, the default
// gateway and routes on the link's first static network of their
// family, the name servers as dns services. What network_data.json
// cannot say (bonds, bridges, VLANs, an ethernet matched by name, v1
// configs) is an error, and the layout serves no network_data.json: a
// half-converted network is worse than DHCP's fallback.
func networkDataJSON(doc map[string]any) ([]byte, error) {
	if inner, ok := doc["network"].(map[string]any); ok {
		doc = inner
	}
	if v := fmt.Sprint(doc["version"]); v != "2" {
		return nil, fmt.Errorf("network config version %s: only version 2 converts to network_data.json", v)
	}
	for k := range doc {
		switch k {
		case "version", "ethernets", "renderer":
		default:
			return nil, fmt.Errorf("network config key %s: network_data.json here carries ethernets only", k)
		}
	}
	eths, _ := doc["ethernets"].(map[string]any)
	names := make([]string, 0, len(eths))
	for n := range eths {
		names = append(names, n)
	}
	sort.Strings(names)
	links, networks := []any{}, []any{}
	var dns []string
	for _, name := range names {
		e, ok := eths[name].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("ethernets.%s: want a mapping", name)
		}
		match, _ := e["match"].(map[string]any)
		mac, _ := match["macaddress"].(string)
		hw, err := net.ParseMAC(mac)
		if err != nil || len(hw) != 6 {
			return nil, fmt.Errorf("ethernets.%s: no match.macaddress, and network_data.json names NICs by MAC", name)
		}
		link := map[string]any{"id": name, "type": "phy", "ethernet_mac_address": hw.String()}
		if mtu, ok := e["mtu"]; ok {
			link["mtu"] = mtu
		}
		links = append(links, link)
		addNet := func(typ string) map[string]any {
			n := map[string]any{"id": fmt.Sprintf("network%d", len(networks)), "link": name, "type": typ}
			networks = append(networks, n)
			return n
		}
		if isTrue(e["dhcp4"]) {
			addNet("ipv4_dhcp")
		}
		if isTrue(e["dhcp6"]) {
			addNet("ipv6_dhcp")
		}
		var first [2]map[string]any // the first static network, v4 and v6
		addrs, _ := e["addresses"].([]any)
		for _, a := range addrs {
			s, _ := a.(string)
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("ethernets.%s.addresses: %q: want ADDRESS/PREFIX", name, s)
			}
			fam, typ := 0, "ipv4"
			if p.Addr().Is6() {
				fam, typ = 1, "ipv6"
			}
			n := addNet(typ)
			n["ip_address"] = p.Addr().String()
			n["netmask"] = maskString(p)
			n["routes"] = []any{}
			if first[fam] == nil {
				first[fam] = n
			}
		}
		addRoute := func(to, via string) error {
			gw, err := netip.ParseAddr(via)
			if err != nil {
				return fmt.Errorf("ethernets.%s: gateway %q: want an address", name, via)
			}
			fam := 0
			if gw.Is6() {
				fam = 1
			}
			if first[fam] == nil {
				return fmt.Errorf("ethernets.%s: a route via %s without a static address of its family", name, via)
			}
			dst := netip.PrefixFrom(netip.IPv4Unspecified(), 0)
			if fam == 1 {
				dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
			}
			if to != "default" && to != "" {
				if dst, err = netip.ParsePrefix(to); err != nil {
					return fmt.Errorf("ethernets.%s: route to %q: want a PREFIX or default", name, to)
				}
			}
			n := first[fam]
			n["routes"] = append(n["routes"].([]any), map[string]any{"network": dst.Masked().Addr().String(), "netmask": maskString(dst), "gateway": gw.String()})
			return nil
		}
		for _, k := range []string{"gateway4", "gateway6"} {
			if gw, ok := e[k].(string); ok {
				if err := addRoute("default", gw); err != nil {
					return nil, err
				}
			}
		}
		routes, _ := e["routes"].([]any)
		for _, r := range routes {
			rm, _ := r.(map[string]any)
			to, _ := rm["to"].(string)
			via, _ := rm["via"].(string)
			if err := addRoute(to, via); err != nil {
				return nil, err
			}
		}
		if ns, ok := e["nameservers"].(map[string]any); ok {
			list, _ := ns["addresses"].([]any)
			for _, a := range list {
				if s, ok := a.(string); ok && !containsString(dns, s) {
					dns = append(dns, s)
				}
			}
		}
	}
	if len(links) == 0 {
		return nil, errors.New("no ethernets")
	}
	services := []any{}
	for _, a := range dns {
		services = append(services, map[string]any{"type": "dns", "address": a})
	}
	return json.Marshal(map[string]any{"links": links, "networks": networks, "services": services})
}

func isTrue(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		switch strings.ToLower(x) {
		case "true", "yes", "on", "1":
			return true
		}
	}
	return false
}

// maskString is a prefix's netmask as network_data.json writes it:
// dotted for IPv4, colon-hex for IPv6.
func maskString(p netip.Prefix) string {
	bits := p.Addr().BitLen()
	m := net.CIDRMask(p.Bits(), bits)
	a, _ := netip.AddrFromSlice(m)
	return a.String()
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
