package render

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/pyfmt"
)

// networkdUnit collects one .network file's sections the way cloud-init's
// CfgParser does: plain sections hold sorted, de-duplicated "Key=Value"
// lines; every address is its own [Address] section; routes are grouped
// by an id into [Route] sections.
type networkdUnit struct {
	sections map[string][]string
	routes   map[string][]string
	// err is the first value refused: every line passes through set or
	// route, values read from the v2 document included.
	err error
}

func newNetworkdUnit() *networkdUnit {
	return &networkdUnit{sections: map[string][]string{}, routes: map[string][]string{}}
}

func addUnique(list []string, line string) []string {
	for _, l := range list {
		if l == line {
			return list
		}
	}
	list = append(list, line)
	sort.Strings(list)
	return list
}

func (u *networkdUnit) set(section, key, value string) {
	if u.refused(section, key, value) {
		return
	}
	u.sections[section] = addUnique(u.sections[section], key+"="+value)
}

func (u *networkdUnit) route(id, key, value string) {
	if u.refused("Route", key, value) {
		return
	}
	u.routes[id] = addUnique(u.routes[id], key+"="+value)
}

// refused records a value a unit file cannot carry on its line.
func (u *networkdUnit) refused(section, key, value string) bool {
	why := whyUnsafe("networkd", value, false, networkdUnsafe)
	if why != "" && u.err == nil {
		u.err = unsafeError("networkd", "["+section+"] "+key, value, why)
	}
	return why != ""
}

func (u *networkdUnit) String() string {
	var b strings.Builder
	names := []string{"Address", "Bridge", "DHCPv4", "DHCPv6", "Link", "Match", "Network", "Route"}
	for _, name := range names {
		if name == "Route" {
			ids := make([]string, 0, len(u.routes))
			for id := range u.routes {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			for _, id := range ids {
				b.WriteString("[Route]\n")
				for _, line := range u.routes[id] {
					b.WriteString(line + "\n\n")
				}
			}
			continue
		}
		lines := u.sections[name]
		if len(lines) == 0 {
			continue
		}
		if name == "Address" {
			for _, line := range lines {
				b.WriteString("[Address]\n" + line + "\n\n")
			}
			continue
		}
		b.WriteString("[" + name + "]\n")
		for _, line := range lines {
			b.WriteString(line + "\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (u *networkdUnit) addRoute(id string, r model.Route) {
	if r.Gateway != "" {
		u.route(id, "Gateway", r.Gateway)
	}
	u.route(id, "Destination", fmt.Sprintf("%s/%d", r.Network, r.Prefix))
	if r.Metric != nil {
		u.route(id, "Metric", fmt.Sprint(*r.Metric))
	}
}

// Networkd renders one etc/systemd/network/10-cloud-init-<name>.network
// per interface, as cloud-init's networkd renderer does: [Match] on name,
// driver and MAC, MTU in [Link], addresses, gateways, DNS, and DHCP; like
// cloud-init 22.4.2 it adds the global routes to every interface's file.
//
// Unlike cloud-init 22.4.2, which writes no .netdev files (bonds, bridges
// and VLANs are matched but never created), it also writes a .netdev per
// bond, bridge and VLAN and ties their links to them, as netplan's
// networkd backend does (networkdNetdevs).
func Networkd(n *model.Network) (Files, error) {
	if err := checkModel("networkd", n, networkdUnsafe); err != nil {
		return nil, err
	}
	if err := checkFileNames("networkd", n); err != nil {
		return nil, err
	}
	units := map[string]*networkdUnit{}
	devices := v2EthernetsByName(n)
	for _, iface := range n.Interfaces {
		units[iface.Name] = networkdUnitFor(n, iface, devices)
	}
	files, err := networkdNetdevs(n, units)
	if err != nil {
		return nil, err
	}
	for _, iface := range n.Interfaces {
		if err := units[iface.Name].err; err != nil {
			return nil, err
		}
	}
	for name, u := range units {
		files[NetworkdDir+"/10-cloud-init-"+name+".network"] = []byte(u.String())
	}
	return files, nil
}

func networkdUnitFor(n *model.Network, iface *model.Interface, devices map[string]map[string]any) *networkdUnit {
	u := newNetworkdUnit()
	u.set("Match", "Name", iface.Name)
	if iface.Driver != "" {
		u.set("Match", "Driver", iface.Driver)
	}
	if iface.MACAddress != "" {
		u.set("Match", "MACAddress", iface.MACAddress)
	}
	if iface.MTU != 0 {
		u.set("Link", "MTUBytes", fmt.Sprint(iface.MTU))
	}

	dhcp := "no"
	rid := 0
	for _, s := range iface.Subnets {
		switch s.Type {
		case model.SubnetDHCP4, model.SubnetDHCP:
			switch dhcp {
			case "no":
				dhcp = "ipv4"
			case "ipv6":
				dhcp = "yes"
			}
		case model.SubnetDHCP6:
			switch dhcp {
			case "no":
				dhcp = "ipv6"
			case "ipv4":
				dhcp = "yes"
			}
		}
		for _, r := range s.Routes {
			u.addRoute(fmt.Sprintf("r%d", rid), r)
			rid++
		}
		if s.Address != "" {
			if s.Type == model.SubnetStatic || s.Type == model.SubnetStatic6 {
				u.set("Address", "Address", fmt.Sprintf("%s/%d", s.Address, s.Prefix))
			} else {
				u.set("Address", "Address", s.Address)
			}
			if s.Gateway != "" {
				u.route(fmt.Sprintf("a%d", rid), "Gateway", s.Gateway)
				rid++
			}
			if len(s.DNSNameservers) > 0 {
				u.set("Network", "DNS", strings.Join(s.DNSNameservers, " "))
			}
			if len(s.DNSSearch) > 0 {
				u.set("Network", "Domains", strings.Join(s.DNSSearch, " "))
			}
		}
	}
	u.set("Network", "DHCP", dhcp)
	if (dhcp == "ipv6" || dhcp == "yes") && iface.AcceptRA != nil {
		u.set("Network", "IPv6AcceptRA", pyfmt.Str(*iface.AcceptRA))
	}

	switch {
	case iface.DNS != nil:
		if len(iface.DNS.Search) > 0 {
			u.set("Network", "Domains", strings.Join(iface.DNS.Search, " "))
		}
		if len(iface.DNS.Nameservers) > 0 {
			u.set("Network", "DNS", strings.Join(iface.DNS.Nameservers, " "))
		}
	case n.Version == 1:
		if len(n.DNS.Search) > 0 {
			u.set("Network", "Domains", strings.Join(n.DNS.Search, " "))
		}
		if len(n.DNS.Nameservers) > 0 {
			u.set("Network", "DNS", strings.Join(n.DNS.Nameservers, " "))
		}
	}

	for i, r := range n.Routes {
		u.addRoute(fmt.Sprintf("c%d", i), r)
	}

	if n.Version == 2 {
		networkdDHCPOverrides(devices[iface.Name], dhcp, u)
	}
	return u
}

// v2EthernetsByName maps each interface name a v2 config's ethernets give
// to the ethernet's settings: the ethernet whose set-name it is (the
// first in name order when several claim it), else the ethernet of that
// name. One pass over the ethernets, where a search per interface made
// rendering thousands of them quadratic.
func v2EthernetsByName(n *model.Network) map[string]map[string]any {
	ethernets, _ := n.V2["ethernets"].(map[string]any)
	if len(ethernets) == 0 {
		return nil
	}
	out := make(map[string]map[string]any, len(ethernets))
	renamed := map[string]bool{}
	for _, devName := range slices.Sorted(maps.Keys(ethernets)) {
		cfg, ok := ethernets[devName].(map[string]any)
		if !ok {
			continue
		}
		setName, ok := cfg["set-name"]
		if !ok {
			continue
		}
		name := pyfmt.Str(setName)
		if !renamed[name] {
			renamed[name] = true
			out[name] = cfg
		}
	}
	for devName, raw := range ethernets {
		cfg, ok := raw.(map[string]any)
		if ok && !renamed[devName] {
			out[devName] = cfg
		}
	}
	return out
}

// networkdDHCPOverrides reads v2 dhcp4-overrides/dhcp6-overrides (and
// VMware's dhcp4domain/dhcp6domain) from the ethernet the interface came
// from (device, nil when none).
func networkdDHCPOverrides(device map[string]any, dhcp string, u *networkdUnit) {
	if device == nil {
		return
	}
	for _, item := range []string{"dhcp4domain", "dhcp6domain"} {
		v, ok := device[item]
		if !ok {
			continue
		}
		value := "no"
		switch strings.ToLower(pyfmt.Str(v)) {
		case "true", "1", "on", "yes":
			value = "yes"
		}
		section := "DHCPv4"
		if item == "dhcp6domain" {
			section = "DHCPv6"
		}
		u.set(section, "UseDomains", value)
	}
	type override struct{ key, option string }
	common := []override{{"UseDNS", "use-dns"}, {"UseDomains", "use-domains"}, {"UseHostname", "use-hostname"}, {"UseNTP", "use-ntp"}}
	v4only := []override{{"SendHostname", "send-hostname"}, {"Hostname", "hostname"}, {"RouteMetric", "route-metric"}, {"UseMTU", "use-mtu"}, {"UseRoutes", "use-routes"}}
	for _, version := range []string{"4", "6"} {
		overrides, ok := device["dhcp"+version+"-overrides"].(map[string]any)
		if !ok || (dhcp != "yes" && dhcp != "ipv"+version) {
			continue
		}
		list := common
		if version == "4" {
			list = append(append([]override{}, common...), v4only...)
		}
		for _, o := range list {
			if v, ok := overrides[o.option]; ok {
				u.set("DHCPv"+version, o.key, pyfmt.Str(v))
			}
		}
	}
}
