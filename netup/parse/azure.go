package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/seedinit/seedinit/netup/model"
)

// AzureIMDS reads the "network" object of Azure's IMDS instance document
// ({"interface": [{"macAddress": ..., "ipv4": ..., "ipv6": ...}, ...]}),
// as the Azure datasource keeps it, into the network model. It follows
// cloud-init 22.4.2's generate_network_config_from_instance_network_metadata:
// see AzureIMDSNetworkConfig for the rules. opts.Drivers tells which of
// the machine's NICs are bound to hv_netvsc; Azure needs no MAC map, as
// it names NICs by their position in the metadata.
func AzureIMDS(data []byte, opts Options) (*model.Network, error) {
	cfg, order, convErr := AzureIMDSNetworkConfig(data, opts.Drivers)
	if cfg == nil {
		return nil, convErr
	}
	n, parseErr := v2(cfg, opts, ethernetsInOrder(order))
	return refuse(n, errors.Join(convErr, parseErr))
}

// AzureIMDSNetworkConfig turns Azure's IMDS network metadata into the
// cloud-init network config v2 document cloud-init 22.4.2 builds from it,
// and returns it with its ethernets' names in the order cloud-init adds
// them (the metadata's order):
//
//   - The NIC at position i of the interface list is named eth{i}
//     (set-name), whatever happened to the NICs before it, and matched by
//     its macAddress, written lower-case with colons when given as twelve
//     bare characters. When the machine's NIC named eth{i} is bound to
//     hv_netvsc (drivers, NIC name to driver), the match names that driver
//     too, as an accelerated-networking VF shares the synthetic NIC's MAC.
//   - A NIC without any IPv4 or IPv6 address (ipAddress) is left out.
//   - Every NIC gets DHCPv4, and DHCPv6 when it has IPv6 addresses, with
//     route metric 100 times (i + 1), even when there is a single NIC.
//   - Addresses beyond the first of each family, which DHCP brings, are
//     added as static addresses (privateIpAddress) with the prefix of the
//     family's first subnet (/24 or /128 when it gives none), IPv4 first,
//     in the metadata's order.
//
// cloud-init raises on any interface item it cannot read (not an object,
// a missing or non-string macAddress, a family that is not an object, a
// secondary address without privateIpAddress, a missing subnet, ...) and
// then configures no NIC from the metadata at all. Here such an item is
// left out and named in the returned error (by its index and key), and
// every other NIC is still configured. cfg is nil only when the metadata
// is not a JSON object with an "interface" list; an empty list gives a
// document without ethernets, as in cloud-init.
func AzureIMDSNetworkConfig(data []byte, drivers map[string]string) (cfg map[string]any, order []string, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("decode Azure IMDS network metadata: %w", err)
	}
	network, ok := doc.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("decode Azure IMDS network metadata: expected an object, got %s", jsonKind(doc))
	}
	// cloud-init would also take an empty object or string as no NICs;
	// metadata that odd is more likely broken than empty, so say so.
	interfaces, ok := network["interface"].([]any)
	if !ok {
		return nil, nil, fmt.Errorf("convert Azure IMDS network metadata: key \"interface\": expected a list, got %s", jsonKind(network["interface"]))
	}

	var errs []error
	ethernets := map[string]any{}
	for i, item := range interfaces {
		name := fmt.Sprintf("eth%d", i)
		device, err := azureDevice(item, i, drivers[name] == "hv_netvsc")
		if err != nil {
			errs = append(errs, fmt.Errorf("interface[%d] (%s): %w", i, name, err))
			continue
		}
		if device == nil {
			continue
		}
		ethernets[name] = device
		order = append(order, name)
	}
	cfg = map[string]any{"version": int64(2), "ethernets": ethernets}
	if len(errs) > 0 {
		err = fmt.Errorf("convert Azure IMDS network metadata: %w", errors.Join(errs...))
	}
	return cfg, order, err
}

// azureDevice builds the v2 ethernet of the interface item at position
// index, or nil when the item has no address. It checks exactly what
// cloud-init reads, in the same cases: the first address of a family and
// the macAddress of an item without addresses are never looked at.
func azureDevice(item any, index int, netvsc bool) (map[string]any, error) {
	nic, ok := item.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("expected an object, got %s", jsonKind(item))
	}
	metric := map[string]any{"route-metric": int64(index+1) * 100}
	device := map[string]any{
		"dhcp4":           true,
		"dhcp4-overrides": metric,
		"dhcp6":           false,
	}
	hasAddress := false
	var static []any
	for _, family := range []struct{ key, defaultPrefix string }{
		{"ipv4", "24"},
		{"ipv6", "128"},
	} {
		addresses, err := azureFamilyAddresses(nic, family.key)
		if err != nil {
			return nil, err
		}
		if addresses == nil {
			continue
		}
		hasAddress = true
		if family.key == "ipv6" {
			device["dhcp6"] = true
			device["dhcp6-overrides"] = metric
		}
		for j, address := range addresses[1:] {
			where := fmt.Sprintf("key \"%s.ipAddress[%d]\"", family.key, j+1)
			prefix, err := azurePrefix(nic, family.key, family.defaultPrefix)
			if err != nil {
				return nil, err
			}
			entry, ok := address.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: expected an object, got %s", where, jsonKind(address))
			}
			ip, ok := entry["privateIpAddress"]
			if !ok {
				return nil, fmt.Errorf("%s: missing key \"privateIpAddress\"", where)
			}
			static = append(static, jsonStr(ip)+"/"+prefix)
		}
	}
	if !hasAddress {
		return nil, nil
	}
	if len(static) > 0 {
		device["addresses"] = static
	}
	raw, ok := nic["macAddress"]
	if !ok {
		return nil, errors.New("missing key \"macAddress\"")
	}
	mac, ok := raw.(string)
	if !ok {
		return nil, fmt.Errorf("key \"macAddress\": expected a string, got %s", jsonKind(raw))
	}
	match := map[string]any{"macaddress": azureNormalizeMAC(mac)}
	if netvsc {
		match["driver"] = "hv_netvsc"
	}
	device["match"] = match
	device["set-name"] = fmt.Sprintf("eth%d", index)
	return device, nil
}

// azureFamilyAddresses returns the ipAddress list of one family, nil when
// it has none (a missing family or key, or any value Python finds false).
// A one-character string is a one-address list to cloud-init, which never
// looks at the first address; a longer one fails on its second character.
func azureFamilyAddresses(nic map[string]any, family string) ([]any, error) {
	raw, ok := nic[family]
	if !ok {
		return nil, nil
	}
	familyMetadata, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("key %q: expected an object, got %s", family, jsonKind(raw))
	}
	addresses := familyMetadata["ipAddress"]
	if !present(addresses) {
		return nil, nil
	}
	switch x := addresses.(type) {
	case []any:
		return x, nil
	case string:
		if utf8.RuneCountInString(x) == 1 {
			return []any{x}, nil
		}
	}
	return nil, fmt.Errorf("key \"%s.ipAddress\": expected a list, got %s", family, jsonKind(addresses))
}

// azurePrefix is the prefix of a family's first subnet, spelled as
// Python's str() spells it, or defaultPrefix when that subnet has none.
func azurePrefix(nic map[string]any, family, defaultPrefix string) (string, error) {
	raw, ok := nic[family].(map[string]any)["subnet"]
	if !ok {
		return "", fmt.Errorf("key \"%s.subnet\": missing, and needed for the prefix of the secondary addresses", family)
	}
	subnets, ok := raw.([]any)
	if !ok || len(subnets) == 0 {
		return "", fmt.Errorf("key \"%s.subnet\": expected a non-empty list, got %s", family, jsonKind(raw))
	}
	first, ok := subnets[0].(map[string]any)
	if !ok {
		return "", fmt.Errorf("key \"%s.subnet[0]\": expected an object, got %s", family, jsonKind(subnets[0]))
	}
	prefix, ok := first["prefix"]
	if !ok {
		return defaultPrefix, nil
	}
	return jsonStr(prefix), nil
}

// azureNormalizeMAC writes a bare twelve-character MAC ("000D3A047598")
// with colons and any MAC in lower case, as cloud-init's
// normalize_mac_address does; anything else is kept for the v2 parser to
// judge.
func azureNormalizeMAC(mac string) string {
	if runes := []rune(mac); len(runes) == 12 {
		parts := make([]string, 0, 6)
		for i := 0; i < 12; i += 2 {
			parts = append(parts, string(runes[i:i+2]))
		}
		mac = strings.Join(parts, ":")
	}
	return strings.ToLower(mac)
}
