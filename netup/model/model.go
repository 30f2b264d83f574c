// Package model is seedinit's network model: the interfaces, subnets, routes
// and DNS settings that every parser produces and every renderer consumes.
//
// It mirrors cloud-init's NetworkState (cloudinit/net/network_state.py)
// closely on purpose: cloud-init's renderers read that state's quirks (bond
// parameters copied onto members, placeholders created for ports, global DNS
// kept apart from per-interface DNS), and seedinit renders the same files
// only if it keeps the same facts.
package model

import (
	"sort"
)

// Interface types, as cloud-init names them in network config v1.
const (
	TypePhysical   = "physical"
	TypeBond       = "bond"
	TypeBridge     = "bridge"
	TypeVLAN       = "vlan"
	TypeLoopback   = "loopback"
	TypeInfiniband = "infiniband"
)

// Subnet types, as cloud-init names them in network config v1.
const (
	SubnetStatic         = "static"
	SubnetStatic6        = "static6"
	SubnetDHCP           = "dhcp"
	SubnetDHCP4          = "dhcp4"
	SubnetDHCP6          = "dhcp6"
	SubnetSLAAC          = "ipv6_slaac"
	SubnetDHCP6Stateless = "ipv6_dhcpv6-stateless"
	SubnetDHCP6Stateful  = "ipv6_dhcpv6-stateful"
	SubnetManual         = "manual"
	SubnetLoopback       = "loopback"
)

// Network is one machine's network configuration.
type Network struct {
	// Version is the network config version the input was written in
	// (1 or 2); renderers that behave differently per version read it.
	Version int `json:"version"`
	// Interfaces in the order they were first mentioned, as cloud-init's
	// dict keeps them.
	Interfaces []*Interface `json:"interfaces"`
	// Routes not bound to an interface (v1 "route" items).
	Routes []Route `json:"routes,omitempty"`
	// DNS is the global resolver configuration (v1 "nameserver" items
	// without an interface, v2 nameservers of every device).
	DNS DNS `json:"dns"`
	// UseIPv6 is set when any subnet is IPv6.
	UseIPv6 bool `json:"use_ipv6"`
	// V2 is the v2 document as given (below "network:"), for the netplan
	// renderer that passes v2 through unchanged as cloud-init does.
	V2 map[string]any `json:"-"`
}

// Interface is one link: a NIC, a bond, a bridge, a VLAN or the loopback.
type Interface struct {
	Name string `json:"name"`
	// Type is one of the Type* constants; a port that was only named by a
	// bridge has an empty type, as in cloud-init.
	Type       string `json:"type"`
	MACAddress string `json:"mac_address,omitempty"`
	MTU        int    `json:"mtu,omitempty"`
	// AcceptRA and WakeOnLAN are nil when the input did not say.
	AcceptRA  *bool `json:"accept-ra,omitempty"`
	WakeOnLAN *bool `json:"wakeonlan,omitempty"`
	// Driver comes from a v2 match.driver or a v1 physical params.driver.
	Driver string `json:"driver,omitempty"`

	Subnets []Subnet `json:"subnets"`

	VLANID   int    `json:"vlan_id,omitempty"`
	VLANLink string `json:"vlan-raw-device,omitempty"`

	// BondMaster names the bond this interface is a member of.
	BondMaster string `json:"bond-master,omitempty"`
	// IsBondMaster marks a bond (cloud-init's "bond-slaves: none"); its
	// members are the interfaces whose BondMaster names it.
	IsBondMaster bool `json:"bond-slaves,omitempty"`
	// BridgePorts lists a bridge's ports as given.
	BridgePorts []string `json:"bridge_ports,omitempty"`

	// Params holds every other attribute the input set on the link (bond
	// options such as bond-mode or bond_miimon, bridge options such as
	// bridge_stp, v1 physical params), spelled as the input spelled them
	// and in input order. A bond member carries a copy of its bond's.
	Params []Param `json:"params,omitempty"`

	// DNS set for this interface only (v1 nameserver with interface, v2
	// device nameservers).
	DNS *DNS `json:"dns,omitempty"`
}

// Param is one link attribute. Value is a string, int64, float64, bool,
// []string, or map[string]any, as the input had it.
type Param struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// Subnet is one way an interface gets addresses.
type Subnet struct {
	Type string `json:"type"`
	// Address and Prefix for static subnets; Netmask is derived for IPv4.
	Address string `json:"address,omitempty"`
	Prefix  int    `json:"prefix,omitempty"`
	Netmask string `json:"netmask,omitempty"`
	Gateway string `json:"gateway,omitempty"`

	Broadcast   string `json:"broadcast,omitempty"`
	Pointopoint string `json:"pointopoint,omitempty"`
	Scope       string `json:"scope,omitempty"`

	DNSNameservers []string `json:"dns_nameservers,omitempty"`
	DNSSearch      []string `json:"dns_search,omitempty"`
	Routes         []Route  `json:"routes,omitempty"`
	// Metric applies to the subnet's routes (v2 dhcp4-overrides.route-metric).
	Metric int `json:"metric,omitempty"`
	MTU    int `json:"mtu,omitempty"`
	// Control is "auto" (the default), "manual" or "hotplug" (ENI input).
	Control string `json:"control,omitempty"`
	// IPv4 and IPv6 record that an OpenStack network said ipv4/ipv6; the
	// sysconfig renderer reads them to detect duplicate default routes.
	IPv4 bool `json:"ipv4,omitempty"`
	IPv6 bool `json:"ipv6,omitempty"`
}

// Route is a route through a gateway. Network and Prefix name the
// destination; Netmask is derived for IPv4.
type Route struct {
	Network string `json:"network"`
	Prefix  int    `json:"prefix"`
	Netmask string `json:"netmask,omitempty"`
	Gateway string `json:"gateway,omitempty"`
	// Metric is nil when not given; 0 is a valid metric.
	Metric *int `json:"metric,omitempty"`
}

// DNS is a resolver configuration.
type DNS struct {
	Nameservers []string `json:"nameservers"`
	Search      []string `json:"search"`
}

// Find returns the interface called name, or nil.
func (n *Network) Find(name string) *Interface {
	for _, iface := range n.Interfaces {
		if iface.Name == name {
			return iface
		}
	}
	return nil
}

// Param returns the value of the attribute key and whether it was set.
func (i *Interface) Param(key string) (any, bool) {
	for _, p := range i.Params {
		if p.Key == key {
			return p.Value, true
		}
	}
	return nil, false
}

// SetParam sets key, keeping the position of an earlier value.
func (i *Interface) SetParam(key string, value any) {
	for n := range i.Params {
		if i.Params[n].Key == key {
			i.Params[n].Value = value
			return
		}
	}
	i.Params = append(i.Params, Param{Key: key, Value: value})
}

// BondMembers returns the names of the interfaces enslaved to bond, sorted.
func (n *Network) BondMembers(bond string) []string {
	var names []string
	for _, iface := range n.Interfaces {
		if iface.BondMaster == bond {
			names = append(names, iface.Name)
		}
	}
	sort.Strings(names)
	return names
}

// AllBondMembers is BondMembers of every bond at once, keyed by bond
// name: one pass over the interfaces, for renderers that visit every
// bond, where a pass per bond grows with the square of the interfaces.
func (n *Network) AllBondMembers() map[string][]string {
	out := map[string][]string{}
	for _, iface := range n.Interfaces {
		if iface.BondMaster != "" {
			out[iface.BondMaster] = append(out[iface.BondMaster], iface.Name)
		}
	}
	for _, names := range out {
		sort.Strings(names)
	}
	return out
}

// ByName indexes the interfaces by name; where two share a name (which
// no parser produces), the first wins, as with Find.
func (n *Network) ByName() map[string]*Interface {
	out := make(map[string]*Interface, len(n.Interfaces))
	for _, iface := range n.Interfaces {
		if _, dup := out[iface.Name]; !dup {
			out[iface.Name] = iface
		}
	}
	return out
}

// IsIPv6 reports whether the subnet configures IPv6, as cloud-init's
// subnet_is_ipv6 decides it.
func (s Subnet) IsIPv6() bool {
	switch s.Type {
	case SubnetDHCP6, SubnetStatic6, SubnetSLAAC, SubnetDHCP6Stateless, SubnetDHCP6Stateful:
		return true
	case SubnetStatic:
		return isIPv6Address(s.Address)
	}
	return len(s.Type) > 0 && s.Type[len(s.Type)-1] == '6'
}

// IsIPv6Dynamic reports whether the subnet is one of cloud-init's
// IPV6_DYNAMIC_TYPES.
func (s Subnet) IsIPv6Dynamic() bool {
	switch s.Type {
	case SubnetDHCP6, SubnetSLAAC, SubnetDHCP6Stateless, SubnetDHCP6Stateful:
		return true
	}
	return false
}

// IsDefault reports whether the route is a default route.
func (r Route) IsDefault() bool {
	return r.Prefix == 0 && (r.Network == "0.0.0.0" || r.Network == "::")
}

// HasDefaultRoute reports whether any route, global or per subnet, is a
// default route (cloud-init's NetworkState.has_default_route).
func (n *Network) HasDefaultRoute() bool {
	for _, r := range n.Routes {
		if r.IsDefault() {
			return true
		}
	}
	for _, iface := range n.Interfaces {
		for _, s := range iface.Subnets {
			for _, r := range s.Routes {
				if r.IsDefault() {
					return true
				}
			}
		}
	}
	return false
}

// BondParamsV2 and BridgeParamsV2 give the netplan (v2) name of each bond
// and bridge parameter under the v1 name cloud-init keeps in its state:
// cloud-init's NET_CONFIG_TO_V2. The netplan renderer reads them forwards,
// the v2 parser backwards (V1Param).
var BondParamsV2 = map[string]string{
	"bond-ad-select": "ad-select", "bond-arp-interval": "arp-interval",
	"bond-arp-ip-target": "arp-ip-target", "bond-arp-validate": "arp-validate",
	"bond-downdelay": "down-delay", "bond-fail-over-mac": "fail-over-mac-policy",
	"bond-lacp-rate": "lacp-rate", "bond-miimon": "mii-monitor-interval",
	"bond-min-links": "min-links", "bond-mode": "mode",
	"bond-num-grat-arp": "gratuitous-arp", "bond-primary": "primary",
	"bond-primary-reselect": "primary-reselect-policy", "bond-updelay": "up-delay",
	"bond-xmit-hash-policy": "transmit-hash-policy",
}

var BridgeParamsV2 = map[string]string{
	"bridge_ageing": "ageing-time", "bridge_bridgeprio": "priority",
	"bridge_fd": "forward-delay", "bridge_hello": "hello-time",
	"bridge_maxage": "max-age", "bridge_pathcost": "path-cost",
	"bridge_portprio": "port-priority", "bridge_stp": "stp",
}

// V1Param is the v1 name of the v2 parameter v2 in table (BondParamsV2 or
// BridgeParamsV2).
func V1Param(table map[string]string, v2 string) (string, bool) {
	for v1, name := range table {
		if name == v2 {
			return v1, true
		}
	}
	return "", false
}
