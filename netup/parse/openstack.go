package parse

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/pyfmt"
	"github.com/seedinit/seedinit/seed/yaml11"
)

var openstackSubnetKeys = []string{
	"netmask", "broadcast", "metric", "gateway", "pointopoint", "scope",
	"dns_nameservers", "dns_search", "routes",
}

// NetworkDataJSON parses an OpenStack network_data.json the way
// cloud-init's convert_net_json does: links become interfaces (bonds are
// named bond0, bond1, ... in link order; VLANs <parent>.<id>), networks
// become their link's subnets, dns services become global nameservers.
// A NIC link without a "name" gets the name of the machine's NIC with its
// ethernet_mac_address, from opts.MACs.
func NetworkDataJSON(data []byte, opts Options) (*model.Network, error) {
	doc, err := decodePythonJSON(data)
	if err != nil {
		return nil, fmt.Errorf("decode network_data.json: %w", err)
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decode network_data.json: expected an object, got a %s", yaml11.Kind(doc))
	}
	config, errs := convertNetJSON(m, opts)
	net, err := v1(map[string]any{"version": int64(1), "config": config}, opts)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return refuse(net, fmt.Errorf("parse network_data.json: %w", errors.Join(errs...)))
	}
	return net, nil
}

type linkInfo struct {
	name string
	mac  string
}

type linkUpdate struct {
	cfg     map[string]any
	key     string
	format  string // "%s" or "%s.<vlan id>"
	targets []string
	list    bool
	where   string
}

func convertNetJSON(doc map[string]any, opts Options) ([]any, []error) {
	var errs []error
	links, err := asList(doc["links"])
	if err != nil {
		errs = append(errs, fmt.Errorf("key \"links\": %w", err))
	}
	networks, err := asList(doc["networks"])
	if err != nil {
		errs = append(errs, fmt.Errorf("key \"networks\": %w", err))
	}
	services, err := asList(doc["services"])
	if err != nil {
		errs = append(errs, fmt.Errorf("key \"services\": %w", err))
	}
	macs := map[string]string{}
	for mac, name := range opts.MACs {
		macs[strings.ToLower(mac)] = name
	}

	// Each link takes the networks that name it, in document order;
	// grouping them once keeps a document of thousands of links linear.
	networksOf := map[string][]int{}
	for ni, rawNet := range networks {
		if nw, ok := rawNet.(map[string]any); ok {
			link := pyfmt.Str(nw["link"])
			networksOf[link] = append(networksOf[link], ni)
		} else {
			errs = append(errs, fmt.Errorf("networks[%d]: expected an object, got a %s", ni, yaml11.Kind(rawNet)))
		}
	}

	var config []any
	var updates []linkUpdate
	info := map[string]*linkInfo{}
	bondNumber := 0
	for li, raw := range links {
		where := fmt.Sprintf("links[%d]", li)
		link, err := asMap(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		id := pyfmt.Str(link["id"])
		if link["id"] == nil {
			errs = append(errs, fmt.Errorf("%s: missing key \"id\"", where))
			continue
		}
		where = fmt.Sprintf("links[%d] (id %s)", li, label(id))
		linkType, _ := link["type"].(string)
		cfg := map[string]any{}
		for _, k := range []string{"name", "type", "mac_address", "subnets", "params", "mtu"} {
			if v, ok := link[k]; ok {
				cfg[k] = v
			}
		}
		// A MAC that is not one is refused even where it names no NIC
		// of this machine, like every invalid value: the config that
		// holds it is not what its author meant.
		badMAC := false
		for _, key := range []string{"ethernet_mac_address", "vlan_mac_address"} {
			if v := link[key]; yaml11.Truthy(v) && !checkMAC(pyfmt.Str(v)) {
				errs = append(errs, fmt.Errorf("%s: %w", where, macError(key, v)))
				badMAC = true
			}
		}
		if badMAC {
			continue
		}
		cur := &linkInfo{}
		if v, ok := cfg["name"]; ok {
			cur.name = pyfmt.Str(v)
		}
		if v := link["ethernet_mac_address"]; yaml11.Truthy(v) {
			cur.mac = strings.ToLower(pyfmt.Str(v))
		}
		var subnets []any
		for _, ni := range networksOf[id] {
			nw := networks[ni].(map[string]any)
			subnet := map[string]any{}
			for _, k := range openstackSubnetKeys {
				if v, ok := nw[k]; ok {
					subnet[k] = v
				}
			}
			netType, _ := nw["type"].(string)
			switch netType {
			case "ipv4_dhcp":
				subnet["type"] = "dhcp4"
			case "ipv6_dhcp":
				subnet["type"] = "dhcp6"
			case "ipv6_slaac", "ipv6_dhcpv6-stateless", "ipv6_dhcpv6-stateful":
				subnet["type"] = netType
			case "ipv4", "static":
				subnet["type"] = "static"
				subnet["address"] = nw["ip_address"]
			case "ipv6", "static6":
				cfg["accept-ra"] = false
				subnet["type"] = "static6"
				subnet["address"] = nw["ip_address"]
			default:
				errs = append(errs, fmt.Errorf("networks[%d] (id %s): unknown type %s", ni, label(nw["id"]), quoteValue(netType)))
				continue
			}
			if netType == "ipv6_dhcpv6-stateful" || netType == "ipv6_dhcp" {
				cfg["accept-ra"] = true
			}
			if netType == "ipv4" {
				subnet["ipv4"] = true
			}
			if netType == "ipv6" {
				subnet["ipv6"] = true
			}
			subnets = append(subnets, subnet)
		}
		cfg["subnets"] = subnets
		switch linkType {
		case "bond":
			params := map[string]any{}
			if cur.mac != "" {
				cfg["mac_address"] = cur.mac
			}
			for k, v := range link {
				if k != "bond_links" && strings.HasPrefix(k, "bond") {
					params[k] = v
				}
			}
			members, err := scalarList(link["bond_links"])
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: key \"bond_links\": %w", where, err))
			}
			name := fmt.Sprintf("bond%d", bondNumber)
			bondNumber++
			updates = append(updates, linkUpdate{cfg: cfg, key: "bond_interfaces", format: "%s", targets: members, list: true, where: where})
			cfg["params"] = params
			cfg["name"] = name
			cur.name = name
		case "vlan":
			parent := pyfmt.Str(link["vlan_link"])
			vid := pyfmt.Str(link["vlan_id"])
			if link["vlan_link"] == nil || link["vlan_id"] == nil {
				errs = append(errs, fmt.Errorf("%s: a vlan link needs \"vlan_link\" and \"vlan_id\"", where))
				continue
			}
			// The id becomes part of the VLAN's name.
			if id, err := toInt(link["vlan_id"]); err != nil || id < 0 || id > 4094 {
				errs = append(errs, fmt.Errorf("%s: %w", where, invalid("vlan_id", link["vlan_id"], "not a VLAN id (0-4094)")))
				continue
			}
			name := parent + "." + vid
			cfg["name"] = name
			cfg["vlan_id"] = link["vlan_id"]
			cfg["mac_address"] = link["vlan_mac_address"]
			updates = append(updates,
				linkUpdate{cfg: cfg, key: "vlan_link", format: "%s", targets: []string{parent}, where: where},
				linkUpdate{cfg: cfg, key: "name", format: "%s." + vid, targets: []string{parent}, where: where})
			cur.name = name
			if v := link["vlan_mac_address"]; v != nil {
				cur.mac = pyfmt.Str(v)
			} else {
				cur.mac = ""
			}
		default:
			// phy, ovs, tap, vif, bridge, ethernet and every other type are
			// NICs, as in cloud-init (which only logs a warning for types it
			// does not know).
			cfg["type"] = model.TypePhysical
			if cur.mac != "" {
				cfg["mac_address"] = cur.mac
			} else {
				cfg["mac_address"] = nil
			}
		}
		cfg["_where"] = where
		config = append(config, cfg)
		info[id] = cur
	}

	// Fill in names from the machine's NICs, then resolve references.
	for _, li := range info {
		if li.name == "" && li.mac != "" {
			li.name = macs[li.mac]
		}
	}
	var kept []any
	for _, c := range config {
		cfg := c.(map[string]any)
		where := cfg["_where"].(string)
		delete(cfg, "_where")
		if cfg["type"] == model.TypePhysical {
			if _, ok := cfg["name"]; !ok {
				mac, _ := cfg["mac_address"].(string)
				switch {
				case mac == "":
					errs = append(errs, fmt.Errorf("%s: no ethernet_mac_address and no name", where))
					continue
				case macs[mac] == "":
					errs = append(errs, fmt.Errorf("%s: no NIC with MAC %s on this machine (give its name with --mac name,mac)", where, label(mac)))
					continue
				}
				cfg["name"] = macs[mac]
			}
		}
		kept = append(kept, cfg)
	}
	for _, u := range updates {
		var names []string
		ok := true
		for _, t := range u.targets {
			li, found := info[t]
			if !found || li.name == "" {
				errs = append(errs, fmt.Errorf("%s: key %q: no usable link with id %s", u.where, u.key, label(t)))
				ok = false
				continue
			}
			names = append(names, strings.Replace(u.format, "%s", li.name, 1))
		}
		if !ok {
			continue
		}
		if u.list {
			u.cfg[u.key] = toAny(names)
		} else {
			u.cfg[u.key] = names[0]
		}
	}
	for si, raw := range services {
		svc, err := asMap(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("services[%d]: %w", si, err))
			continue
		}
		cmd := map[string]any{}
		for k, v := range svc {
			cmd[k] = v
		}
		cmd["type"] = "nameserver"
		kept = append(kept, cmd)
	}
	return kept, errs
}
