package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/pyfmt"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// digitalOceanNICNames are the names cloud-init gives a droplet's NICs by
// their "type"; a NIC of any other type keeps its name on the machine.
var digitalOceanNICNames = map[string]string{"public": "eth0", "private": "eth1"}

// digitalOceanSubnetKeys are the keys of a NIC's metadata that describe
// an address, in the order cloud-init adds them.
var digitalOceanSubnetKeys = []string{"ipv4", "ipv6", "anchor_ipv4", "anchor_ipv6"}

// DigitalOcean reads a droplet's network metadata, as the DigitalOcean
// datasource keeps it ({"interfaces": {...}, "dns": {"nameservers":
// [...]}}, the "interfaces" and "dns" values of /metadata/v1.json), into
// the network model. It follows cloud-init 22.4.2's
// DataSourceDigitalOcean.network_config: see DigitalOceanNetworkConfig
// for the rules and for where seedinit departs from them.
func DigitalOcean(data []byte, opts Options) (*model.Network, error) {
	cfg, convErr := DigitalOceanNetworkConfig(data, opts.MACs)
	if cfg == nil {
		return nil, convErr
	}
	n, parseErr := v1(cfg, opts)
	return refuse(n, errors.Join(convErr, parseErr))
}

// DigitalOceanNetworkConfig turns a droplet's network metadata into the
// cloud-init network config v1 document cloud-init 22.4.2 builds from it
// (convert_network_configuration):
//
//   - Each key of "interfaces", in document order, gives one NIC: the
//     first of its list. It is matched by its "mac" among the machine's
//     NICs (macs, MAC to name) and named after its "type": public is
//     eth0, private is eth1, any other type (or none) keeps the
//     machine's name.
//   - Its ipv4, ipv6, anchor_ipv4 and anchor_ipv6 objects, in that order
//     and when not empty, become static subnets: an IPv4 ip_address with
//     its netmask, an IPv6 one written ip_address/cidr. Only a public
//     NIC's ipv4 and ipv6 keep their gateway (null when the metadata has
//     none, as in cloud-init).
//   - dns.nameservers, when not empty, becomes a global nameserver item
//     at the end.
//
// Where cloud-init raises and so configures nothing, this configures
// every usable NIC and subnet and returns an error naming each one it
// left out (by interfaces key, list index and subnet key): a NIC whose
// MAC is not on the machine, a NIC that is not an object or has no
// string "mac", a subnet that is not an object or has no string
// ip_address. A "type" that is a list or an object is reported too, the
// NIC keeping its machine name. Absent or null "dns" (and a "dns" without
// nameservers) configures no nameserver, where cloud-init raises; a
// "dns" or nameservers of the wrong type is reported and left out. MACs
// are matched whatever their case (cloud-init wants the metadata's in
// lower case) and written in lower case.
//
// cfg is nil only when the metadata cannot be decoded, has no usable
// "interfaces" object, or macs is empty: cloud-init then asks the running
// system for its NICs, which a parser cannot do.
func DigitalOceanNetworkConfig(data []byte, macs map[string]string) (cfg map[string]any, err error) {
	doc, err := decodePythonJSON(data)
	if err != nil {
		return nil, fmt.Errorf("decode DigitalOcean network metadata: %w", err)
	}
	metadata, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decode DigitalOcean network metadata: expected an object, got %s", jsonKind(doc))
	}
	if !yaml11.Truthy(metadata["interfaces"]) {
		return nil, fmt.Errorf("convert DigitalOcean network metadata: key \"interfaces\": missing or empty (%s)", jsonKind(metadata["interfaces"]))
	}
	interfaces, ok := metadata["interfaces"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("convert DigitalOcean network metadata: key \"interfaces\": expected an object, got %s", jsonKind(metadata["interfaces"]))
	}
	if len(macs) == 0 {
		// cloud-init asks the running system here; a parser cannot, and
		// an empty config would silently unconfigure the machine.
		return nil, errors.New("convert DigitalOcean network metadata: no NIC of this machine is known by MAC (the metadata names NICs by MAC only)")
	}
	names := make(map[string]string, len(macs))
	for mac, name := range macs {
		names[strings.ToLower(mac)] = name
	}

	var errs []error
	items := []any{}
	for _, key := range orderedKeys(interfaces, jsonKeysAt(data, "interfaces")) {
		where := "interfaces." + label(key)
		list, ok := interfaces[key].([]any)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: expected a list of NICs, got %s", where, jsonKind(interfaces[key])))
			continue
		}
		if len(list) == 0 {
			errs = append(errs, fmt.Errorf("%s: empty list, no NIC to configure", where))
			continue
		}
		nic, nicErrs := digitalOceanNIC(list[0], names, where+"[0]")
		errs = append(errs, nicErrs...)
		if nic != nil {
			items = append(items, nic)
		}
	}
	if nameservers, err := digitalOceanNameservers(metadata["dns"]); err != nil {
		errs = append(errs, err)
	} else if nameservers != nil {
		items = append(items, map[string]any{"type": "nameserver", "address": nameservers})
	}
	cfg = map[string]any{"version": int64(1), "config": items}
	if len(errs) > 0 {
		err = fmt.Errorf("convert DigitalOcean network metadata: %w", errors.Join(errs...))
	}
	return cfg, err
}

// digitalOceanNIC builds the v1 physical item for one NIC's metadata, or
// nil when it cannot be matched to a NIC of the machine. where names the
// NIC in errors.
func digitalOceanNIC(raw any, names map[string]string, where string) (map[string]any, []error) {
	nic, ok := raw.(map[string]any)
	if !ok {
		return nil, []error{fmt.Errorf("%s: expected an object, got %s", where, jsonKind(raw))}
	}
	rawMAC, ok := nic["mac"]
	if !ok {
		return nil, []error{fmt.Errorf("%s: missing key \"mac\"", where)}
	}
	mac, ok := rawMAC.(string)
	if !ok {
		return nil, []error{fmt.Errorf("%s: key \"mac\": expected a string, got %s", where, jsonKind(rawMAC))}
	}
	mac = strings.ToLower(mac)
	machineName, ok := names[mac]
	if !ok {
		return nil, []error{fmt.Errorf("%s: MAC %s: no NIC of this machine has it", where, label(mac))}
	}

	var errs []error
	nicType, hasType := nic["type"]
	if !hasType {
		nicType = "unknown"
	}
	name := machineName
	switch t := nicType.(type) {
	case string:
		if fixed, ok := digitalOceanNICNames[t]; ok {
			name = fixed
		}
	case []any, map[string]any:
		// cloud-init fails here (an unhashable dict key); the NIC is
		// still usable under the name the machine gave it.
		errs = append(errs, fmt.Errorf("%s: key \"type\": expected a string, got %s; keeping the name %s", where, jsonKind(nicType), label(machineName)))
	}
	isPublic := nicType == "public"

	subnets := []any{}
	for _, key := range digitalOceanSubnetKeys {
		subnet, err := digitalOceanSubnet(nic[key])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: %w", where, key, err))
			continue
		}
		if subnet == nil {
			continue
		}
		if !isPublic || strings.HasPrefix(key, "anchor_") {
			delete(subnet, "gateway")
		}
		subnets = append(subnets, subnet)
	}
	return map[string]any{
		"type":        model.TypePhysical,
		"mac_address": mac,
		"name":        name,
		"subnets":     subnets,
	}, errs
}

// digitalOceanSubnet builds the v1 static subnet for one address object,
// gateway included; nil when the metadata leaves it empty.
func digitalOceanSubnet(raw any) (map[string]any, error) {
	if !yaml11.Truthy(raw) {
		return nil, nil
	}
	spec, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("expected an object, got %s", jsonKind(raw))
	}
	ip, ok := spec["ip_address"].(string)
	if !ok {
		return nil, fmt.Errorf("key \"ip_address\": expected a string, got %s", jsonKind(spec["ip_address"]))
	}
	subnet := map[string]any{
		"type":    model.SubnetStatic,
		"control": "auto",
		"address": ip,
		"gateway": spec["gateway"],
	}
	if strings.Contains(ip, ":") {
		// Python's str() of whatever cidr holds, "None" included: the v1
		// parser then reports a prefix that is not one.
		subnet["address"] = ip + "/" + pyfmt.Str(spec["cidr"])
	} else {
		subnet["netmask"] = spec["netmask"]
	}
	return subnet, nil
}

// digitalOceanNameservers is dns.nameservers as cloud-init passes it on:
// nil when dns is absent or null or lists none.
func digitalOceanNameservers(dns any) (any, error) {
	if dns == nil {
		return nil, nil
	}
	m, ok := dns.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("key \"dns\": expected an object, got %s", jsonKind(dns))
	}
	nameservers := m["nameservers"]
	if !yaml11.Truthy(nameservers) {
		return nil, nil
	}
	switch nameservers.(type) {
	case []any, string:
		return nameservers, nil
	}
	return nil, fmt.Errorf("key \"dns.nameservers\": expected a list, got %s", jsonKind(nameservers))
}

// jsonKeysAt lists the keys of the object at path (object keys from the
// top) in the order data writes them, which a decoded Go map forgets and
// Python's json module keeps: a key written twice keeps the place of its
// first occurrence, and an object written twice counts in its last
// occurrence, as in a Python dict. Nil when there is no such object.
func jsonKeysAt(data []byte, path ...string) []string {
	raw := json.RawMessage(data)
	for _, key := range path {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return nil
		}
		raw = obj[key]
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		if !seen[key] {
			seen[key] = true
			keys = append(keys, key)
		}
	}
	return keys
}
