package parse

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/pyfmt"
)

// vultrNameservers are the resolvers cloud-init 22.4.2 writes for every
// Vultr machine, whatever the metadata says.
var vultrNameservers = []any{"108.61.10.10", "2001:19f0:300:1704::6"}

// Vultr reads the network part of Vultr's metadata (v1.json), as the
// Vultr datasource stores it ({"interfaces": [...]}), into the network
// model: see VultrNetworkConfig for the rules. The v1 document it builds
// is then read by the package's v1 parser; the returned error joins both
// steps' errors, and the network holds everything usable.
func Vultr(data []byte, opts Options) (*model.Network, error) {
	cfg, convErr := VultrNetworkConfig(data, opts.MACs)
	if cfg == nil {
		return nil, convErr
	}
	n, parseErr := v1(cfg, opts)
	return refuse(n, errors.Join(convErr, parseErr))
}

// VultrNetworkConfig turns Vultr's "interfaces" list into the cloud-init
// network config v1 document that cloud-init 22.4.2's
// generate_network_config builds:
//
//   - A nameserver entry for Vultr's two resolvers comes first.
//   - Each NIC is named after the machine's NIC with its "mac" (macs, MAC
//     to name; case does not matter here, where cloud-init wants the
//     metadata's MAC in lower case) and keeps the metadata's MAC as
//     mac_address.
//   - The first NIC is the public one: DHCPv4 and IPv6 SLAAC, accept-ra
//     1. It is configured even when marked "unconfigured".
//   - Every later NIC is private and skipped when "unconfigured" is true
//     (Python's truth); otherwise it gets a static address from
//     ipv4.address and ipv4.netmask.
//   - A NIC's "mtu" and "accept-ra" are copied when present, its "routes"
//     go on its first subnet, and each of ipv4.additional (address,
//     netmask, optional routes) and ipv6.additional (network, prefix,
//     optional routes) becomes one more static subnet.
//
// cloud-init raises on the first NIC it cannot use and so configures
// nothing; instead, the returned error names each unusable NIC (by index
// and MAC) or item, and the document holds every other:
//
//   - A NIC whose MAC is not on the machine, that is not an object, or,
//     when private, has no ipv4.address or ipv4.netmask is left out.
//   - A missing or null ipv4, ipv6 or "additional" (or an empty one)
//     means no additional addresses of that family; cloud-init raises on
//     any NIC without them. One that is not a list is reported and its
//     addresses skipped; so is each additional address that is not an
//     object or lacks a key, the others still being configured.
//
// Values are otherwise copied as they are, for the v1 parser to judge.
//
// cfg is nil only when the input cannot be read as a whole: not a JSON
// object, no "interfaces" list, a "cloud_interfaces" key (cloud-init
// hands that list on as the network config unread, which its own network
// code cannot use either: the caller should fall back), or an empty macs
// (cloud-init asks the running system, which a parser cannot do).
func VultrNetworkConfig(data []byte, macs map[string]string) (cfg map[string]any, err error) {
	doc, err := decodePythonJSON(data)
	if err != nil {
		return nil, fmt.Errorf("decode Vultr network metadata: %w", err)
	}
	metadata, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decode Vultr network metadata: expected an object, got %s", jsonKind(doc))
	}
	if _, ok := metadata["cloud_interfaces"]; ok {
		return nil, errors.New("convert Vultr network metadata: key \"cloud_interfaces\" is not supported (cloud-init passes that list on as a network config, which is no config version it reads)")
	}
	interfaces, ok := metadata["interfaces"].([]any)
	if !ok {
		return nil, fmt.Errorf("convert Vultr network metadata: key \"interfaces\": expected a list, got %s", jsonKind(metadata["interfaces"]))
	}
	if len(macs) == 0 {
		// cloud-init asks the running system here; a parser cannot, and
		// a config without the NICs would silently unconfigure them.
		return nil, errors.New("convert Vultr network metadata: no NIC of this machine is known by MAC (the metadata names NICs by MAC only)")
	}
	names := make(map[string]string, len(macs))
	for mac, name := range macs {
		names[strings.ToLower(mac)] = name
	}

	config := []any{map[string]any{"type": "nameserver", "address": append([]any{}, vultrNameservers...)}}
	var errs []error
	for i, raw := range interfaces {
		where := fmt.Sprintf("interfaces[%d]", i)
		nic, ok := raw.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: expected an object, got %s", where, jsonKind(raw)))
			continue
		}
		primary := i == 0
		if !primary && present(nic["unconfigured"]) {
			continue
		}
		if mac, ok := nic["mac"].(string); ok {
			where = fmt.Sprintf("%s (MAC %s)", where, label(mac))
		}
		entry, nicErrs := vultrInterface(nic, names, primary)
		for _, err := range nicErrs {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
		if entry != nil {
			config = append(config, entry)
		}
	}
	cfg = map[string]any{"version": int64(1), "config": config}
	if len(errs) > 0 {
		err = fmt.Errorf("convert Vultr network metadata: %w", errors.Join(errs...))
	}
	return cfg, err
}

// vultrInterface builds one NIC's physical entry; nil when the NIC cannot
// be configured at all, with the reasons.
func vultrInterface(nic map[string]any, names map[string]string, primary bool) (map[string]any, []error) {
	rawMAC, ok := nic["mac"]
	if !ok {
		return nil, []error{errors.New("missing key \"mac\"")}
	}
	mac, ok := rawMAC.(string)
	if !ok {
		return nil, []error{fmt.Errorf("key \"mac\": expected a string, got %s", jsonKind(rawMAC))}
	}
	name, ok := names[strings.ToLower(mac)]
	if !ok {
		return nil, []error{errors.New("no NIC with this MAC on the machine")}
	}
	entry := map[string]any{"name": name, "type": "physical", "mac_address": mac}
	var first map[string]any
	if primary {
		entry["accept-ra"] = int64(1)
		first = map[string]any{"type": "dhcp", "control": "auto"}
		entry["subnets"] = []any{first, map[string]any{"type": "ipv6_slaac", "control": "auto"}}
	} else {
		ipv4, ok := nic["ipv4"].(map[string]any)
		if !ok {
			return nil, []error{fmt.Errorf("key \"ipv4\": expected an object with the private address, got %s", jsonKind(nic["ipv4"]))}
		}
		if !present(ipv4["address"]) {
			return nil, []error{errors.New("no private address (ipv4.address)")}
		}
		netmask, ok := ipv4["netmask"]
		if !ok {
			// A guessed prefix could route the private network wrongly.
			return nil, []error{errors.New("no netmask for the private address (ipv4.netmask)")}
		}
		first = map[string]any{"type": "static", "control": "auto", "address": ipv4["address"], "netmask": netmask}
		entry["subnets"] = []any{first}
	}
	for _, key := range []string{"mtu", "accept-ra"} {
		if v, ok := nic[key]; ok {
			entry[key] = v
		}
	}
	if routes, ok := nic["routes"]; ok {
		first["routes"] = routes
	}
	subnets, errs := vultrAdditional(nic)
	entry["subnets"] = append(entry["subnets"].([]any), subnets...)
	return entry, errs
}

// vultrAdditional lists the static subnets of a NIC's additional IPv4 and
// IPv6 addresses, and the reasons any could not be used.
func vultrAdditional(nic map[string]any) ([]any, []error) {
	var subnets []any
	var errs []error
	for _, family := range []struct {
		key, subnetType string
		required        []string
	}{
		{"ipv4", "static", []string{"address", "netmask"}},
		{"ipv6", "static6", []string{"network", "prefix"}},
	} {
		var additional any
		switch x := nic[family.key].(type) {
		case nil:
			continue
		case map[string]any:
			additional = x["additional"]
		default:
			errs = append(errs, fmt.Errorf("key %q: expected an object, got %s", family.key, jsonKind(x)))
			continue
		}
		items, ok := additional.([]any)
		if !ok {
			// cloud-init takes len() of it: an empty string or object
			// adds nothing there either.
			if present(additional) {
				errs = append(errs, fmt.Errorf("key \"%s.additional\": expected a list, got %s", family.key, jsonKind(additional)))
			}
			continue
		}
		for j, raw := range items {
			where := fmt.Sprintf("%s.additional[%d]", family.key, j)
			item, ok := raw.(map[string]any)
			if !ok {
				errs = append(errs, fmt.Errorf("%s: expected an object, got %s", where, jsonKind(raw)))
				continue
			}
			if err := requireKeys(item, family.required...); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			subnet := map[string]any{"type": family.subnetType, "control": "auto"}
			if family.key == "ipv4" {
				subnet["address"] = item["address"]
				subnet["netmask"] = item["netmask"]
			} else {
				subnet["address"] = pyfmt.Str(item["network"]) + "/" + pyfmt.Str(item["prefix"])
			}
			if routes, ok := item["routes"]; ok {
				subnet["routes"] = routes
			}
			subnets = append(subnets, subnet)
		}
	}
	return subnets, errs
}
