package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
)

// NetworkDataJSON writes a network as the OpenStack network_data.json a
// config drive or a metadata service carries (seedinit serve), in the
// form cloud-init's convert_net_json reads back into the same network:
// each NIC a "phy" link named as in the config (so that no MAC lookup on
// the instance is needed), each VLAN a "vlan" link over its parent (with
// its MAC: cloud-init fails on a VLAN link without one), each
// bond a "bond" link over its members; every subnet a network of its
// link; the global nameservers "dns" services. What network_data.json
// cannot say (bridges, per-link DNS search lists) is an error: a config
// drive that quietly drops half the network boots an appliance nobody
// can reach.
func NetworkDataJSON(n *model.Network) ([]byte, error) {
	var errs []error
	var links, networks []any
	for _, iface := range n.Interfaces {
		link := map[string]any{"id": iface.Name, "name": iface.Name}
		if iface.MTU > 0 {
			link["mtu"] = iface.MTU
		}
		switch {
		case iface.IsBondMaster || iface.Type == model.TypeBond:
			link["type"] = "bond"
			link["bond_links"] = n.BondMembers(iface.Name)
			for _, p := range iface.Params {
				if strings.HasPrefix(p.Key, "bond") {
					// Nova's spelling (bond_mode): cloud-init turns it
					// back into bond-mode, older releases keep it, and
					// ifupdown takes either.
					link["bond_"+strings.ReplaceAll(strings.TrimLeft(strings.TrimPrefix(p.Key, "bond"), "-_"), "-", "_")] = p.Value
				}
			}
			if iface.MACAddress != "" {
				link["ethernet_mac_address"] = iface.MACAddress
			}
		case iface.Type == model.TypeVLAN:
			// convert_net_json names a VLAN <parent>.<id> and needs its
			// MAC: a VLAN's is its parent's unless the config sets one.
			if want := fmt.Sprintf("%s.%d", iface.VLANLink, iface.VLANID); iface.Name != want {
				errs = append(errs, fmt.Errorf("interface %s: a VLAN on a config drive is named %s by cloud-init; name it so", iface.Name, want))
				continue
			}
			mac := iface.MACAddress
			if parent := n.Find(iface.VLANLink); mac == "" && parent != nil {
				mac = parent.MACAddress
			}
			if mac == "" {
				errs = append(errs, fmt.Errorf("interface %s: cloud-init needs a VLAN's MAC on a config drive; give it or its link %s a macaddress", iface.Name, iface.VLANLink))
				continue
			}
			link["type"] = "vlan"
			link["vlan_link"] = iface.VLANLink
			link["vlan_id"] = iface.VLANID
			link["vlan_mac_address"] = mac
		case iface.Type == model.TypePhysical:
			link["type"] = "phy"
			if iface.MACAddress != "" {
				link["ethernet_mac_address"] = iface.MACAddress
			}
		case iface.Type == model.TypeLoopback:
			continue
		default:
			errs = append(errs, fmt.Errorf("interface %s: a %s has no network_data.json form", iface.Name, orUnknown(iface.Type)))
			continue
		}
		links = append(links, link)
		for i, s := range iface.Subnets {
			nw := map[string]any{"id": fmt.Sprintf("%s-%d", iface.Name, i), "link": iface.Name}
			switch s.Type {
			case model.SubnetDHCP, model.SubnetDHCP4:
				nw["type"] = "ipv4_dhcp"
			case model.SubnetDHCP6:
				nw["type"] = "ipv6_dhcp"
			case model.SubnetSLAAC, model.SubnetDHCP6Stateless, model.SubnetDHCP6Stateful:
				nw["type"] = s.Type
			case model.SubnetStatic, model.SubnetStatic6:
				nw["type"] = "ipv4"
				if s.IsIPv6() {
					nw["type"] = "ipv6"
				}
				nw["ip_address"] = s.Address
				if s.Netmask != "" {
					nw["netmask"] = s.Netmask
				} else if s.Prefix > 0 {
					nw["ip_address"] = fmt.Sprintf("%s/%d", s.Address, s.Prefix)
				}
				if s.Gateway != "" {
					nw["gateway"] = s.Gateway
				}
			default:
				errs = append(errs, fmt.Errorf("interface %s: a %s subnet has no network_data.json form", iface.Name, orUnknown(s.Type)))
				continue
			}
			// A v2 device's nameservers are the interface's: on each
			// of its subnets in network_data.json, as cloud-init puts
			// them on its v1 subnets.
			if iface.DNS != nil && len(s.DNSNameservers)+len(s.DNSSearch) == 0 {
				s.DNSNameservers, s.DNSSearch = iface.DNS.Nameservers, iface.DNS.Search
			}
			if len(s.DNSNameservers) > 0 {
				nw["dns_nameservers"] = s.DNSNameservers
			}
			if len(s.DNSSearch) > 0 {
				nw["dns_search"] = s.DNSSearch
			}
			var routes []any
			for _, r := range s.Routes {
				routes = append(routes, routeJSON(r))
			}
			if len(routes) > 0 {
				nw["routes"] = routes
			}
			networks = append(networks, nw)
		}
	}
	if len(n.Routes) > 0 {
		errs = append(errs, errors.New("routes outside any subnet have no network_data.json form; give them on a subnet"))
	}
	if len(n.DNS.Search) > 0 {
		errs = append(errs, errors.New("a global DNS search list has no network_data.json form; give it on a subnet"))
	}
	var services []any
	for _, ns := range n.DNS.Nameservers {
		services = append(services, map[string]any{"type": "dns", "address": ns})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("convert network-config to network_data.json: %w", err)
	}
	return json.Marshal(map[string]any{"links": nonNil(links), "networks": nonNil(networks), "services": nonNil(services)})
}

func routeJSON(r model.Route) map[string]any {
	out := map[string]any{"network": r.Network, "gateway": r.Gateway}
	if r.Netmask != "" {
		out["netmask"] = r.Netmask
	} else {
		out["network"] = fmt.Sprintf("%s/%d", r.Network, r.Prefix)
	}
	if r.Metric != nil {
		out["metric"] = *r.Metric
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "link of no type"
	}
	return s
}

// nonNil keeps JSON's [] for an empty list: cloud-init iterates them.
func nonNil(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}
