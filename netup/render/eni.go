package render

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/pyfmt"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// eniTypeOrder puts NICs before the bonds, bridges and VLANs built on
// them, which ifupdown needs.
var eniTypeOrder = map[string]int{
	model.TypeLoopback: 0, model.TypePhysical: 1, model.TypeInfiniband: 2,
	model.TypeBond: 3, model.TypeBridge: 4, model.TypeVLAN: 5,
}

// eniMultilineKeys take one line per value.
var eniMultilineKeys = map[string]bool{
	"bridge_pathcost": true, "bridge_portprio": true, "bridge_waitport": true,
}

// ENI renders /etc/network/interfaces.d/50-cloud-init and the udev rules
// that name NICs by MAC, as cloud-init's eni renderer does on Debian.
//
// Deliberate difference: cloud-init writes an interface's own DNS (a v1
// nameserver with "interface", v2 device nameservers) as a line
// "dns {'nameservers': [...], ...}" that ifupdown cannot use; seedinit
// leaves that line out.
func ENI(n *model.Network) (Files, error) {
	content, err := ENIContent(n)
	if err != nil {
		return nil, err
	}
	udev, err := udevRules(n)
	if err != nil {
		return nil, err
	}
	return Files{
		ENIPath:       []byte(DebianHeader + content),
		UdevRulesPath: udev,
	}, nil
}

// ENIContent is the interfaces text without a header. It refuses a model
// with a value that would start a line of its own: ifupdown runs the
// argument of an "up" line as a command.
func ENIContent(n *model.Network) (string, error) {
	if err := checkModel("eni", n, ""); err != nil {
		return "", err
	}
	lo := &model.Interface{Name: "lo", Type: model.TypePhysical,
		Subnets: []model.Subnet{{Type: model.SubnetLoopback, Control: "auto"}}}
	if found := n.Find("lo"); found != nil {
		copied := *found
		copied.Subnets = append([]model.Subnet(nil), found.Subnets...)
		lo = &copied
	}
	if len(lo.Subnets) > 0 {
		if len(n.DNS.Nameservers) > 0 {
			lo.Subnets[0].DNSNameservers = n.DNS.Nameservers
		}
		if len(n.DNS.Search) > 0 {
			lo.Subnets[0].DNSSearch = n.DNS.Search
		}
	}
	var sections [][]string
	sections = append(sections, eniInterface(lo)...)
	ifaces := make([]*model.Interface, 0, len(n.Interfaces))
	for _, iface := range n.Interfaces {
		if iface.Name != "lo" {
			ifaces = append(ifaces, iface)
		}
	}
	sort.SliceStable(ifaces, func(i, j int) bool {
		oi, oj := typeRank(ifaces[i].Type), typeRank(ifaces[j].Type)
		if oi != oj {
			return oi < oj
		}
		return ifaces[i].Name < ifaces[j].Name
	})
	for _, iface := range ifaces {
		sections = append(sections, eniInterface(iface)...)
	}
	for _, r := range n.Routes {
		sections = append(sections, eniRoute(r, ""))
	}
	parts := make([]string, len(sections))
	for i, s := range sections {
		parts[i] = strings.Join(s, "\n")
	}
	return strings.Join(parts, "\n\n") + "\n", nil
}

func typeRank(t string) int {
	if r, ok := eniTypeOrder[t]; ok {
		return r
	}
	// A bridge port nobody defined has no type; cloud-init fails on it.
	return len(eniTypeOrder)
}

// eniState carries the per-stanza values cloud-init keeps on the
// interface while it walks the subnets.
type eniState struct {
	acceptRA string // "0"/"1" once a DHCP or static IPv6 subnet saw accept-ra
	dhcp     string // "0"/"1" for SLAAC stanzas
}

func eniInterface(iface *model.Interface) [][]string {
	var sections [][]string
	var st eniState
	if len(iface.Subnets) == 0 {
		var lines []string
		if iface.BondMaster != "" || iface.IsBondMaster {
			lines = append(lines, "auto "+iface.Name)
		}
		lines = append(lines, fmt.Sprintf("iface %s inet manual", iface.Name))
		lines = append(lines, eniAttrs(iface, st, 0)...)
		return append(sections, lines)
	}
	autoSeen := false
	for index, s := range iface.Subnets {
		mode := s.Type
		control := s.Control
		if control == "" {
			control = "auto"
		}
		inet := "inet"
		subnetMTU := 0
		if s.IsIPv6() {
			inet = "inet6"
		} else {
			subnetMTU = s.MTU
		}
		switch {
		case s.Type == model.SubnetDHCP4 || s.Type == model.SubnetDHCP6 || s.Type == model.SubnetDHCP6Stateful:
			mode = "dhcp"
			if iface.AcceptRA != nil {
				st.acceptRA = boolDigit(*iface.AcceptRA)
			}
		case s.Type == model.SubnetDHCP6Stateless:
			mode, st.dhcp = "auto", "1"
		case s.Type == model.SubnetSLAAC:
			mode, st.dhcp = "auto", "0"
		case s.IsIPv6():
			mode = "static"
			if iface.AcceptRA != nil {
				st.acceptRA = boolDigit(*iface.AcceptRA)
			}
		}
		// Older ifupdown rejects a second "auto" line for one interface.
		if autoSeen {
			control = "alias"
		}
		var lines []string
		switch control {
		case "auto":
			lines = append(lines, "auto "+iface.Name)
			autoSeen = true
		case "hotplug":
			lines = append(lines, "allow-hotplug "+iface.Name)
		default:
			lines = append(lines, "# control-"+control+" "+iface.Name)
		}
		lines = append(lines, fmt.Sprintf("iface %s %s %s", iface.Name, inet, mode))
		lines = append(lines, eniSubnet(s)...)
		if index == 0 {
			lines = append(lines, eniAttrs(iface, st, subnetMTU)...)
		}
		for _, r := range s.Routes {
			lines = append(lines, eniRoute(r, "    ")...)
		}
		sections = append(sections, lines)
	}
	return sections
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func eniSubnet(s model.Subnet) []string {
	var lines []string
	add := func(key, value string) {
		if value != "" {
			lines = append(lines, "    "+key+" "+value)
		}
	}
	if s.Address != "" {
		if s.Prefix != 0 || s.Type == model.SubnetStatic || s.Type == model.SubnetStatic6 {
			add("address", fmt.Sprintf("%s/%d", s.Address, s.Prefix))
		} else {
			// cloud-init fails on an address without a prefix here.
			add("address", s.Address)
		}
	}
	add("broadcast", s.Broadcast)
	if s.Metric != 0 {
		add("metric", strconv.Itoa(s.Metric))
	}
	add("gateway", s.Gateway)
	add("pointopoint", s.Pointopoint)
	if s.MTU != 0 {
		add("mtu", strconv.Itoa(s.MTU))
	}
	add("scope", s.Scope)
	add("dns-search", strings.Join(s.DNSSearch, " "))
	add("dns-nameservers", strings.Join(s.DNSNameservers, " "))
	sort.Strings(lines)
	return lines
}

// eniAttrs are the interface-level lines of the first stanza.
func eniAttrs(iface *model.Interface, st eniState, subnetMTU int) []string {
	var lines []string
	add := func(key string, value any) {
		if b, ok := value.(bool); ok {
			value = "off"
			if b {
				value = "on"
			}
		}
		if !yaml11.Truthy(value) {
			return
		}
		if eniMultilineKeys[key] {
			switch v := value.(type) {
			case []string:
				for _, item := range v {
					lines = append(lines, "    "+key+" "+item)
				}
				return
			case map[string]any:
				// cloud-init iterates the mapping's keys only.
				keys := make([]string, 0, len(v))
				for k := range v {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					lines = append(lines, "    "+key+" "+k)
				}
				return
			}
		}
		if list, ok := value.([]string); ok {
			value = strings.Join(list, " ")
		}
		lines = append(lines, "    "+key+" "+pyfmt.Str(value))
	}
	switch iface.Type {
	case model.TypeBond, model.TypeBridge, model.TypeInfiniband, model.TypeVLAN:
		add("hwaddress", iface.MACAddress)
	}
	if iface.MTU != 0 && subnetMTU == 0 {
		add("mtu", int64(iface.MTU))
	}
	if iface.WakeOnLAN != nil && *iface.WakeOnLAN {
		add("ethernet-wol", "g")
	}
	add("accept_ra", st.acceptRA)
	add("dhcp", st.dhcp)
	add("vlan-raw-device", iface.VLANLink)
	if iface.VLANID != 0 {
		add("vlan_id", int64(iface.VLANID))
	}
	add("bond-master", iface.BondMaster)
	if iface.IsBondMaster {
		add("bond-slaves", "none")
	}
	add("bridge_ports", iface.BridgePorts)
	for _, p := range iface.Params {
		switch p.Key {
		case "control", "device_id", "driver", "index", "inet", "mode", "name", "subnets", "type",
			"mac_address", "hwaddress", "dns", "accept_ra", "dhcp", "ethernet-wol":
			continue
		}
		add(p.Key, p.Value)
	}
	sort.Strings(lines)
	return lines
}

// eniRoute is a route as ifupdown post-up/pre-down commands; "|| true"
// keeps ifup from failing on a route that already exists.
func eniRoute(r model.Route, indent string) []string {
	defaultGW := ""
	switch {
	case r.Network == "0.0.0.0" && r.Netmask == "0.0.0.0":
		defaultGW = " default"
	case r.Network == "::" && r.Prefix == 0:
		defaultGW = " -A inet6 default"
	}
	line := ""
	if defaultGW == "" {
		switch {
		case strings.Contains(r.Network, ":"):
			line += " -A inet6"
		case r.Prefix == 32:
			line += " -host"
		default:
			line += " -net"
		}
		line += fmt.Sprintf(" %s/%d", r.Network, r.Prefix)
	}
	if r.Gateway != "" {
		line += defaultGW + " gw " + r.Gateway
	} else {
		line += defaultGW
	}
	if r.Metric != nil {
		line += " metric " + strconv.Itoa(*r.Metric)
	}
	return []string{
		indent + "post-up route add" + line + " || true",
		indent + "pre-down route del" + line + " || true",
	}
}
