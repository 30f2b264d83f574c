package render

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
)

// Netplan renders etc/netplan/50-cloud-init.yaml as cloud-init's netplan
// renderer does (with net-convert's features dhcp-use-domains and
// ipv6-mtu): a v2 input passes through unchanged; a v1 state becomes
// ethernets, bonds, bridges and vlans.
func Netplan(n *model.Network) (Files, error) {
	content, err := NetplanContent(n)
	if err != nil {
		return nil, err
	}
	return Files{NetplanPath: []byte(DebianHeader + content)}, nil
}

// NetplanContent is the netplan YAML without a header.
func NetplanContent(n *model.Network) (string, error) {
	// netplan's generators write the values into networkd units and
	// NetworkManager keyfiles: a newline survives YAML's quoting.
	var doc map[string]any
	if n.Version == 2 && n.V2 != nil {
		if err := checkDocument("netplan", "network", n.V2); err != nil {
			return "", err
		}
		doc = map[string]any{"network": n.V2}
	} else {
		if err := checkModel("netplan", n, ""); err != nil {
			return "", err
		}
		doc = map[string]any{"network": netplanV2(n)}
	}
	out, err := marshalYAML(doc)
	if err != nil {
		return "", fmt.Errorf("render netplan: %w", err)
	}
	return string(out), nil
}

func netplanV2(n *model.Network) map[string]any {
	ethernets := map[string]any{}
	bonds := map[string]any{}
	bridges := map[string]any{}
	vlans := map[string]any{}
	members := n.AllBondMembers()
	for _, iface := range n.Interfaces {
		switch iface.Type {
		case model.TypePhysical:
			eth := map[string]any{}
			if iface.MACAddress != "" {
				eth["set-name"] = iface.Name
				eth["match"] = map[string]any{"macaddress": strings.ToLower(iface.MACAddress)}
			}
			netplanAddresses(iface, eth)
			ethernets[iface.Name] = eth
		case model.TypeBond:
			bond := map[string]any{}
			params := map[string]any{}
			for _, p := range iface.Params {
				if !strings.HasPrefix(p.Key, "bond_") && !strings.HasPrefix(p.Key, "bond-") {
					continue
				}
				if name, ok := model.BondParamsV2[strings.ReplaceAll(p.Key, "_", "-")]; ok {
					params[name] = netplanValue(p.Value)
				}
			}
			if len(params) > 0 {
				bond["parameters"] = params
			}
			if iface.MACAddress != "" {
				bond["macaddress"] = strings.ToLower(iface.MACAddress)
			}
			if iface.IsBondMaster {
				if members := members[iface.Name]; len(members) > 0 {
					bond["interfaces"] = members
				}
			}
			netplanAddresses(iface, bond)
			bonds[iface.Name] = bond
		case model.TypeBridge:
			ports := append([]string{}, iface.BridgePorts...)
			sort.Strings(ports)
			bridge := map[string]any{"interfaces": ports}
			params := map[string]any{}
			for _, p := range iface.Params {
				name, ok := model.BridgeParamsV2[p.Key]
				if !ok {
					continue
				}
				if name == "path-cost" || name == "port-priority" {
					params[name] = portValues(p.Value)
					continue
				}
				params[name] = netplanValue(p.Value)
			}
			if len(params) > 0 {
				bridge["parameters"] = params
			}
			if iface.MACAddress != "" {
				bridge["macaddress"] = strings.ToLower(iface.MACAddress)
			}
			netplanAddresses(iface, bridge)
			bridges[iface.Name] = bridge
		case model.TypeVLAN:
			vlan := map[string]any{"id": int64(iface.VLANID), "link": iface.VLANLink}
			if iface.MACAddress != "" {
				vlan["macaddress"] = strings.ToLower(iface.MACAddress)
			}
			netplanAddresses(iface, vlan)
			vlans[iface.Name] = vlan
		}
	}
	// Global DNS goes to every device with addresses and no DNS of its own.
	if len(n.DNS.Nameservers) > 0 || len(n.DNS.Search) > 0 {
		for _, section := range []map[string]any{ethernets, bonds, bridges, vlans} {
			for _, dev := range section {
				d := dev.(map[string]any)
				_, hasNS := d["nameservers"]
				_, hasAddr := d["addresses"]
				if hasNS || !hasAddr {
					continue
				}
				d["nameservers"] = map[string]any{
					"addresses": append([]string{}, n.DNS.Nameservers...),
					"search":    append([]string{}, n.DNS.Search...),
				}
			}
		}
	}
	out := map[string]any{"version": int64(2)}
	for name, section := range map[string]map[string]any{"ethernets": ethernets, "bonds": bonds, "bridges": bridges, "vlans": vlans} {
		if len(section) > 0 {
			out[name] = section
		}
	}
	return out
}

func netplanValue(v any) any {
	if list, ok := v.([]string); ok {
		out := make([]any, len(list))
		for i, s := range list {
			out[i] = s
		}
		return out
	}
	return v
}

// portValues turns v1's ["eth0 10", "eth1 20"] into {eth0: 10, eth1: 20}.
func portValues(v any) any {
	list, ok := v.([]string)
	if !ok {
		return netplanValue(v)
	}
	out := map[string]any{}
	for _, item := range list {
		f := strings.Fields(item)
		if len(f) != 2 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		out[f[0]] = n
	}
	return out
}

// netplanAddresses is cloud-init's _extract_addresses.
func netplanAddresses(iface *model.Interface, entry map[string]any) {
	var addresses, nameservers, search []string
	var routes []any
	for _, s := range iface.Subnets {
		switch {
		case strings.HasPrefix(s.Type, "dhcp"):
			key := s.Type
			if key == "dhcp" {
				key = "dhcp4"
			}
			entry[key] = true
		case s.IsIPv6Dynamic():
			entry["dhcp6"] = true
		case s.Type == model.SubnetStatic || s.Type == model.SubnetStatic6:
			addr := fmt.Sprintf("%s/%d", s.Address, s.Prefix)
			if s.Gateway != "" {
				if strings.Contains(s.Gateway, ":") {
					entry["gateway6"] = s.Gateway
				} else {
					entry["gateway4"] = s.Gateway
				}
			}
			nameservers = append(nameservers, s.DNSNameservers...)
			search = append(search, s.DNSSearch...)
			if s.MTU != 0 {
				key := "mtu"
				if s.IsIPv6() {
					key = "ipv6-mtu"
				}
				entry[key] = int64(s.MTU)
			}
			for _, r := range s.Routes {
				route := map[string]any{"to": fmt.Sprintf("%s/%d", r.Network, r.Prefix)}
				if r.Gateway != "" {
					route["via"] = r.Gateway
				} else {
					route["via"] = nil
				}
				if r.Metric != nil {
					route["metric"] = int64(*r.Metric)
				}
				routes = append(routes, route)
			}
			addresses = append(addresses, addr)
		}
	}
	if iface.MTU != 0 {
		if _, has := entry["mtu"]; !has {
			entry["mtu"] = int64(iface.MTU)
		}
	}
	if len(addresses) > 0 {
		entry["addresses"] = addresses
	}
	if len(routes) > 0 {
		entry["routes"] = routes
	}
	ns := map[string]any{}
	if len(nameservers) > 0 {
		ns["addresses"] = nameservers
	}
	if len(search) > 0 {
		ns["search"] = search
	}
	if len(ns) > 0 {
		entry["nameservers"] = ns
	}
	if iface.AcceptRA != nil {
		entry["accept-ra"] = *iface.AcceptRA
	}
}
