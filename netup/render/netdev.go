package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/pyfmt"
)

// networkdBondKeys gives the [Bond] key of each v2 bond parameter, in the
// order netplan's networkd backend writes them. The durations are
// milliseconds when given as a plain number.
var networkdBondKeys = []struct{ v2, key string }{
	{"mode", "Mode"},
	{"lacp-rate", "LACPTransmitRate"},
	{"mii-monitor-interval", "MIIMonitorSec"},
	{"min-links", "MinLinks"},
	{"transmit-hash-policy", "TransmitHashPolicy"},
	{"ad-select", "AdSelect"},
	{"arp-interval", "ARPIntervalSec"},
	// cloud-init's v2 spelling (netplan's is arp-ip-targets).
	{"arp-ip-target", "ARPIPTargets"},
	{"arp-validate", "ARPValidate"},
	{"up-delay", "UpDelaySec"},
	{"down-delay", "DownDelaySec"},
	{"fail-over-mac-policy", "FailOverMACPolicy"},
	{"gratuitous-arp", "GratuitousARP"},
	{"primary-reselect-policy", "PrimaryReselectPolicy"},
}

// networkdBridgeKeys: the [Bridge] key of each v2 bridge parameter; a
// port's path-cost and port-priority go to the port's own .network.
var networkdBridgeKeys = []struct{ v2, key string }{
	{"ageing-time", "AgeingTimeSec"},
	{"priority", "Priority"},
	{"forward-delay", "ForwardDelaySec"},
	{"hello-time", "HelloTimeSec"},
	{"max-age", "MaxAgeSec"},
	{"stp", "STP"},
}

var networkdMilliseconds = map[string]bool{"MIIMonitorSec": true, "ARPIntervalSec": true, "UpDelaySec": true, "DownDelaySec": true}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// networkdNetdevs returns the .netdev file of each bond, bridge and VLAN,
// and adds to the .network units of their links what ties them together
// (Bond=, PrimarySlave=, Bridge= with the port's [Bridge] cost and
// priority, VLAN=), as netplan's networkd backend writes them, from the
// same v2 view of the model the netplan renderer writes.
func networkdNetdevs(n *model.Network, units map[string]*networkdUnit) (Files, error) {
	v2 := netplanV2(n)
	files := Files{}
	var refused error
	byName := n.ByName()
	members := n.AllBondMembers()
	netdev := func(name, kind string, dev map[string]any, section string, lines []string) {
		for _, line := range append([]string{name}, lines...) {
			if why := whyUnsafe("networkd", line, false, networkdUnsafe); why != "" && refused == nil {
				refused = unsafeError("networkd", name+".netdev ["+section+"]", line, why)
			}
		}
		var b strings.Builder
		b.WriteString("[NetDev]\nName=" + name + "\n")
		if mac, ok := dev["macaddress"].(string); ok && mac != "" {
			b.WriteString("MACAddress=" + mac + "\n")
		}
		if iface := byName[name]; iface != nil && iface.MTU != 0 {
			fmt.Fprintf(&b, "MTUBytes=%d\n", iface.MTU)
		}
		b.WriteString("Kind=" + kind + "\n")
		if len(lines) > 0 {
			b.WriteString("\n[" + section + "]\n" + strings.Join(lines, "\n") + "\n")
		}
		files[NetworkdDir+"/10-cloud-init-"+name+".netdev"] = []byte(b.String())
	}
	member := func(name, key, value string) {
		if u := units[name]; u != nil {
			u.set("Network", key, value)
		}
	}

	bonds, _ := v2["bonds"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(bonds)) {
		bond := bonds[name].(map[string]any)
		params, _ := bond["parameters"].(map[string]any)
		var lines []string
		for _, k := range networkdBondKeys {
			if v, ok := params[k.v2]; ok {
				lines = append(lines, k.key+"="+networkdValue(k.key, v))
			}
		}
		netdev(name, "bond", bond, "Bond", lines)
		for _, m := range members[name] {
			member(m, "Bond", name)
		}
		if primary, ok := params["primary"]; ok {
			member(pyfmt.Str(primary), "PrimarySlave", "true")
		}
	}

	bridges, _ := v2["bridges"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(bridges)) {
		bridge := bridges[name].(map[string]any)
		params, _ := bridge["parameters"].(map[string]any)
		var lines []string
		for _, k := range networkdBridgeKeys {
			if v, ok := params[k.v2]; ok {
				lines = append(lines, k.key+"="+networkdValue(k.key, v))
			}
		}
		netdev(name, "bridge", bridge, "Bridge", lines)
		ports, _ := bridge["interfaces"].([]string)
		for _, port := range ports {
			member(port, "Bridge", name)
		}
		for v2Name, key := range map[string]string{"path-cost": "Cost", "port-priority": "Priority"} {
			perPort, _ := params[v2Name].(map[string]any)
			for port, v := range perPort {
				if u := units[port]; u != nil {
					u.set("Bridge", key, pyfmt.Str(v))
				}
			}
		}
	}

	vlans, _ := v2["vlans"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(vlans)) {
		vlan := vlans[name].(map[string]any)
		netdev(name, "vlan", vlan, "VLAN", []string{fmt.Sprintf("Id=%d", vlan["id"])})
		member(pyfmt.Str(vlan["link"]), "VLAN", name)
	}
	return files, refused
}

// networkdValue spells a v2 parameter for networkd: booleans as
// true/false, lists space-separated, a plain number of milliseconds
// with its unit.
func networkdValue(key string, v any) string {
	var s string
	switch x := v.(type) {
	case bool:
		s = fmt.Sprint(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = pyfmt.Str(e)
		}
		s = strings.Join(parts, " ")
	default:
		s = pyfmt.Str(v)
	}
	if networkdMilliseconds[key] && isDigits(s) {
		s += "ms"
	}
	return s
}
