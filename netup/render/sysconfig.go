package render

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/pyfmt"
)

func sysconfigHeader(sep string) string {
	return sep + " Created by cloud-init on instance boot automatically, do not edit.\n" + sep
}

var whitespace = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\s`) })

func sysconfigQuote(v string) string {
	if whitespace().MatchString(v) && !(strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`)) {
		return `"` + v + `"`
	}
	return v
}

// sysconfigMap is one ifcfg file's KEY=value settings.
type sysconfigMap map[string]any

func (m sysconfigMap) String() string {
	var b strings.Builder
	b.WriteString(sysconfigHeader("#"))
	if len(m) > 0 {
		b.WriteString("\n")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		// RHEL's tools infer VLANs from VLAN=yes; cloud-init omits TYPE.
		if k == "TYPE" && v == "Vlan" {
			continue
		}
		var s string
		switch x := v.(type) {
		case bool:
			s = "no"
			if x {
				s = "yes"
			}
		default:
			s = pyfmt.Str(v)
		}
		fmt.Fprintf(&b, "%s=%s\n", k, sysconfigQuote(s))
	}
	return b.String()
}

// sysconfigRoutes is one interface's route-<name> / route6-<name> data.
type sysconfigRoutes struct {
	conf           map[string]any
	lastIdx        int
	setDefaultIPv4 bool
	setDefaultIPv6 bool
}

func (r *sysconfigRoutes) render(proto, dev string) string {
	var b strings.Builder
	b.WriteString(sysconfigHeader("#"))
	if len(r.conf) > 0 {
		b.WriteString("\n")
	}
	keys := make([]string, 0, len(r.conf))
	for k := range r.conf {
		if strings.Contains(k, "ADDRESS") {
			keys = append(keys, k)
		}
	}
	// cloud-init sorts the keys as strings (ADDRESS10 before ADDRESS2).
	sort.Strings(keys)
	reindex := -1
	for _, k := range keys {
		index := strings.Replace(k, "ADDRESS", "", 1)
		addr := pyfmt.Str(r.conf[k])
		gw := ""
		if v, ok := r.conf["GATEWAY"+index]; ok {
			gw = pyfmt.Str(v)
		}
		metric, hasMetric := r.conf["METRIC"+index]
		isV6 := strings.Contains(addr, ":")
		switch {
		case proto == "ipv4" && !isV6:
			reindex++
			fmt.Fprintf(&b, "ADDRESS%d=%s\n", reindex, sysconfigQuote(addr))
			fmt.Fprintf(&b, "GATEWAY%d=%s\n", reindex, sysconfigQuote(gw))
			fmt.Fprintf(&b, "NETMASK%d=%s\n", reindex, sysconfigQuote(pyfmt.Str(r.conf["NETMASK"+index])))
			if hasMetric {
				fmt.Fprintf(&b, "METRIC%d=%s\n", reindex, sysconfigQuote(pyfmt.Str(metric)))
			}
		case proto == "ipv6" && isV6:
			m := ""
			if hasMetric {
				m = "metric " + pyfmt.Str(metric)
			}
			fmt.Fprintf(&b, "%s/%s via %s %s dev %s\n", addr, pyfmt.Str(r.conf["PREFIX"+index]), gw, m, dev)
		}
	}
	return b.String()
}

type sysconfigIface struct {
	name   string
	cfg    sysconfigMap
	routes *sysconfigRoutes
}

// Sysconfig renders RHEL network-scripts as cloud-init's sysconfig
// renderer does for the rhel flavor (net-convert -D centos): ifcfg-<name>
// and route-/route6-<name> under etc/sysconfig/network-scripts, the
// control file etc/sysconfig/network, etc/resolv.conf and a
// NetworkManager drop-in when there are global nameservers, and the udev
// rules that name NICs by MAC.
//
// Like cloud-init, global routes (v1 "route" items) are not written.
// resolv.conf is rendered fresh; cloud-init merges into an existing one.
func Sysconfig(n *model.Network) (Files, error) {
	// The network scripts source ifcfg and route files with the shell.
	if err := checkModel("sysconfig", n, shellUnsafe); err != nil {
		return nil, err
	}
	if err := checkFileNames("sysconfig", n); err != nil {
		return nil, err
	}
	udev, err := udevRules(n)
	if err != nil {
		return nil, err
	}
	var errs []error
	hasDefault := n.HasDefaultRoute()
	var order []*sysconfigIface
	byName := map[string]*sysconfigIface{}
	for _, iface := range n.Interfaces {
		if iface.Type == model.TypeLoopback {
			continue
		}
		si := &sysconfigIface{
			name: iface.Name,
			cfg: sysconfigMap{
				"DEVICE": iface.Name, "TYPE": "Ethernet",
				"ONBOOT": true, "USERCTL": false, "NM_CONTROLLED": false, "BOOTPROTO": "none",
			},
			routes: &sysconfigRoutes{conf: map[string]any{}, lastIdx: 1},
		}
		if iface.MACAddress != "" && (iface.Type == model.TypePhysical || iface.Type == model.TypeInfiniband) {
			si.cfg["HWADDR"] = iface.MACAddress
		}
		if iface.MTU != 0 {
			si.cfg["MTU"] = int64(iface.MTU)
		}
		if iface.AcceptRA != nil {
			si.cfg["IPV6_FORCE_ACCEPT_RA"] = *iface.AcceptRA
		}
		if iface.WakeOnLAN != nil && *iface.WakeOnLAN && iface.Type == model.TypePhysical {
			si.cfg["ETHTOOL_OPTS"] = "wol g"
		}
		order = append(order, si)
		byName[iface.Name] = si
	}
	subnets := func(iface *model.Interface) {
		si := byName[iface.Name]
		if err := sysconfigSubnets(si, iface.Subnets, hasDefault); err != nil {
			errs = append(errs, fmt.Errorf("render sysconfig for %s: %w", iface.Name, err))
		}
		if err := sysconfigSubnetRoutes(si, iface.Subnets); err != nil {
			errs = append(errs, fmt.Errorf("render sysconfig routes for %s: %w", iface.Name, err))
		}
	}
	byType := func(t string) []*model.Interface {
		var out []*model.Interface
		for _, iface := range n.Interfaces {
			if iface.Type == t {
				out = append(out, iface)
			}
		}
		return out
	}
	for _, iface := range byType(model.TypePhysical) {
		subnets(iface)
	}
	members := n.AllBondMembers()
	for _, iface := range byType(model.TypeBond) {
		si := byName[iface.Name]
		if opts := bondingOpts(iface); opts != "" {
			si.cfg["BONDING_OPTS"] = opts
		}
		si.cfg["BONDING_MASTER"] = true
		si.cfg["TYPE"] = "Bond"
		if iface.MACAddress != "" {
			si.cfg["MACADDR"] = iface.MACAddress
		}
		subnets(iface)
		for i, member := range members[iface.Name] {
			si.cfg["BONDING_SLAVE"+strconv.Itoa(i)] = member
			if m := byName[member]; m != nil {
				m.cfg["MASTER"] = iface.Name
				m.cfg["SLAVE"] = true
			}
		}
	}
	for _, iface := range byType(model.TypeVLAN) {
		si := byName[iface.Name]
		si.cfg["VLAN"] = true
		si.cfg["TYPE"] = "Vlan"
		si.cfg["PHYSDEV"] = iface.VLANLink
		subnets(iface)
	}
	for _, iface := range byType(model.TypeBridge) {
		si := byName[iface.Name]
		si.cfg["TYPE"] = "Bridge"
		for _, kv := range [][2]string{{"bridge_stp", "STP"}, {"bridge_ageing", "AGEING"}, {"bridge_bridgeprio", "PRIO"}} {
			if v, ok := iface.Param(kv[0]); ok {
				si.cfg[kv[1]] = v
			}
		}
		if iface.MACAddress != "" {
			si.cfg["MACADDR"] = iface.MACAddress
		}
		for _, port := range iface.BridgePorts {
			if p := byName[port]; p != nil {
				p.cfg["BRIDGE"] = iface.Name
			}
		}
		subnets(iface)
	}
	for _, iface := range byType(model.TypeInfiniband) {
		byName[iface.Name].cfg["TYPE"] = "InfiniBand"
		subnets(iface)
	}

	files := Files{}
	scripts := SysconfigDir + "/network-scripts/"
	for _, si := range order {
		files[scripts+"ifcfg-"+si.name] = []byte(si.cfg.String())
		if len(si.routes.conf) > 0 {
			files[scripts+"route-"+si.name] = []byte(si.routes.render("ipv4", si.name))
			files[scripts+"route6-"+si.name] = []byte(si.routes.render("ipv6", si.name))
		}
	}
	if resolv, err := resolvConf(n); err != nil {
		errs = append(errs, err)
	} else if resolv != "" {
		files[ResolvConfPath] = []byte(resolv)
	}
	if len(n.DNS.Nameservers) > 0 {
		files[NMConfPath] = []byte(sysconfigHeader("#") + "\n[main]\ndns = none\n")
	}
	files[UdevRulesPath] = udev
	control := sysconfigHeader("#") + "\nNETWORKING=yes\n"
	if n.UseIPv6 {
		control += "NETWORKING_IPV6=yes\nIPV6_AUTOCONF=no\n"
	}
	files[SysconfigNetwork] = []byte(control)
	return files, errors.Join(errs...)
}

var bondOptionTemplates = [][2]string{
	{"bond_mode", "mode"}, {"bond_xmit_hash_policy", "xmit_hash_policy"},
	{"bond_miimon", "miimon"}, {"bond_min_links", "min_links"},
	{"bond_arp_interval", "arp_interval"}, {"bond_arp_ip_target", "arp_ip_target"},
	{"bond_arp_validate", "arp_validate"}, {"bond_ad_select", "ad_select"},
	{"bond_num_grat_arp", "num_grat_arp"}, {"bond_downdelay", "downdelay"},
	{"bond_updelay", "updelay"}, {"bond_lacp_rate", "lacp_rate"},
	{"bond_fail_over_mac", "fail_over_mac"}, {"bond_primary", "primary"},
	{"bond_primary_reselect", "primary_reselect"},
}

func bondingOpts(iface *model.Interface) string {
	var opts []string
	for _, t := range bondOptionTemplates {
		for _, key := range []string{t[0], strings.ReplaceAll(t[0], "_", "-")} {
			if v, ok := iface.Param(key); ok {
				s := pyfmt.Str(v)
				if list, isList := v.([]string); isList {
					s = strings.Join(list, " ")
				}
				opts = append(opts, t[1]+"="+s)
				break
			}
		}
	}
	return strings.Join(opts, " ")
}

func sysconfigSubnets(si *sysconfigIface, subnets []model.Subnet, hasDefault bool) error {
	cfg := si.cfg
	cfg["BOOTPROTO"] = "none"
	var errs []error
	for _, s := range subnets {
		mtuKey := "MTU"
		switch s.Type {
		case model.SubnetDHCP6Stateful:
			cfg["BOOTPROTO"] = "dhcp"
			cfg["DHCPV6C"] = true
			cfg["IPV6INIT"] = true
			cfg["IPV6_AUTOCONF"] = false
		case model.SubnetDHCP6:
			cfg["IPV6INIT"] = true
			cfg["DHCPV6C"] = true
		case model.SubnetDHCP6Stateless:
			cfg["IPV6INIT"] = true
			cfg["IPV6_AUTOCONF"] = true
			cfg["DHCPV6C"] = true
			cfg["DHCPV6C_OPTIONS"] = "-S"
		case model.SubnetSLAAC:
			cfg["IPV6INIT"] = true
			cfg["IPV6_AUTOCONF"] = true
		case model.SubnetDHCP4, model.SubnetDHCP:
			cfg["BOOTPROTO"] = "dhcp"
		case model.SubnetStatic, model.SubnetStatic6:
			if s.IsIPv6() {
				mtuKey = "IPV6_MTU"
				cfg["IPV6INIT"] = true
			}
			if s.MTU != 0 {
				cfg[mtuKey] = int64(s.MTU)
			}
			if s.IsIPv6() {
				cfg["IPV6_FORCE_ACCEPT_RA"] = false
				cfg["IPV6_AUTOCONF"] = false
			}
		case model.SubnetManual:
			_, hasMTU := cfg["MTU"]
			cfg["ONBOOT"] = hasMTU
		default:
			errs = append(errs, fmt.Errorf("unknown subnet type %q", s.Type))
		}
		if s.Control == "manual" {
			cfg["ONBOOT"] = false
		}
	}
	v4, v6 := -1, -1
	for _, s := range subnets {
		if s.Metric != 0 {
			cfg["METRIC"] = int64(s.Metric)
		}
		switch {
		case s.Type == model.SubnetDHCP4 || s.Type == model.SubnetDHCP:
			if hasDefault && cfg["BOOTPROTO"] != "none" {
				cfg["DHCLIENT_SET_DEFAULT_ROUTE"] = false
			}
			continue
		case s.IsIPv6Dynamic():
			continue
		case s.Type == model.SubnetStatic || s.Type == model.SubnetStatic6:
		default:
			continue
		}
		if s.IsIPv6() {
			v6++
			cidr := fmt.Sprintf("%s/%d", s.Address, s.Prefix)
			switch v6 {
			case 0:
				cfg["IPV6ADDR"] = cidr
			case 1:
				cfg["IPV6ADDR_SECONDARIES"] = cidr
			default:
				cfg["IPV6ADDR_SECONDARIES"] = pyfmt.Str(cfg["IPV6ADDR_SECONDARIES"]) + " " + cidr
			}
		} else {
			v4++
			suffix := ""
			if v4 > 0 {
				suffix = strconv.Itoa(v4)
			}
			cfg["IPADDR"+suffix] = s.Address
			cfg["NETMASK"+suffix] = model.PrefixToIPv4Mask(s.Prefix)
		}
		if s.Gateway != "" {
			cfg["DEFROUTE"] = true
			if model.IsIPv6Address(s.Gateway) {
				cfg["IPV6_DEFAULTGW"] = s.Gateway
			} else {
				cfg["GATEWAY"] = s.Gateway
			}
		}
		if len(s.DNSSearch) > 0 {
			cfg["DOMAIN"] = strings.Join(s.DNSSearch, " ")
		}
		for i, ns := range s.DNSNameservers {
			if i >= 3 { // resolv.conf(5): at most 3 nameservers
				break
			}
			cfg["DNS"+strconv.Itoa(i+1)] = ns
		}
	}
	return errors.Join(errs...)
}

func sysconfigSubnetRoutes(si *sysconfigIface, subnets []model.Subnet) error {
	cfg, rc := si.cfg, si.routes
	for _, s := range subnets {
		for _, r := range s.Routes {
			isV6 := s.IPv6 || model.IsIPv6Address(r.Gateway)
			if r.IsDefault() && !s.IsIPv6Dynamic() {
				if (s.IPv4 && rc.setDefaultIPv4) || (s.IPv6 && rc.setDefaultIPv6) {
					return fmt.Errorf("duplicate default route for interface %s", si.name)
				}
				cfg["DEFROUTE"] = true
				if b := cfg["BOOTPROTO"]; b == "dhcp" || b == "dhcp4" {
					cfg["DHCLIENT_SET_DEFAULT_ROUTE"] = true
				}
				if r.Gateway != "" {
					if isV6 {
						cfg["IPV6_DEFAULTGW"] = r.Gateway
						rc.setDefaultIPv6 = true
					} else {
						cfg["GATEWAY"] = r.Gateway
						rc.setDefaultIPv4 = true
					}
				}
				if r.Metric != nil {
					cfg["METRIC"] = int64(*r.Metric)
				}
				continue
			}
			idx := strconv.Itoa(rc.lastIdx)
			if r.Gateway != "" {
				rc.conf["GATEWAY"+idx] = r.Gateway
			}
			if r.Metric != nil {
				rc.conf["METRIC"+idx] = int64(*r.Metric)
			}
			rc.conf["PREFIX"+idx] = int64(r.Prefix)
			if r.Netmask != "" {
				rc.conf["NETMASK"+idx] = r.Netmask
			}
			rc.conf["ADDRESS"+idx] = r.Network
			rc.lastIdx++
		}
	}
	return nil
}

// resolvConf is the resolv.conf cloud-init's sysconfig renderer writes
// from the global DNS: at most 3 nameservers and 6 search domains
// (resolv.conf(5)), duplicates dropped.
func resolvConf(n *model.Network) (string, error) {
	if len(n.DNS.Nameservers) == 0 && len(n.DNS.Search) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.WriteString(sysconfigHeader(";") + "\n")
	var servers []string
	for _, ns := range n.DNS.Nameservers {
		if contains(servers, ns) || len(servers) >= 3 {
			continue
		}
		servers = append(servers, ns)
	}
	for _, ns := range servers {
		b.WriteString("nameserver " + ns + "\n")
	}
	var search []string
	var err error
	for _, d := range n.DNS.Search {
		if contains(search, d) {
			continue
		}
		if len(search) >= 6 {
			err = fmt.Errorf("render resolv.conf: search domain %q would exceed the maximum of 6, dropped", d)
			continue
		}
		if len(strings.Join(append(search, d), " ")) > 256 {
			err = fmt.Errorf("render resolv.conf: search domain %q would exceed 256 characters, dropped", d)
			continue
		}
		search = append(search, d)
	}
	if len(search) > 0 {
		b.WriteString("search " + strings.Join(search, " ") + "\n")
	}
	return b.String(), err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
