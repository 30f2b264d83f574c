package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/pyfmt"
)

// EC2 reads the "network" tree of EC2's instance metadata, as the EC2
// datasource keeps it in JSON ({"interfaces": {"macs": {MAC: {...}}}}),
// into the network model. It follows cloud-init 22.4.2's
// convert_ec2_metadata_network_config with apply_full_imds_network_config
// on (its default): see EC2NetworkConfig for the rules.
func EC2(data []byte, opts Options) (*model.Network, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode EC2 network metadata: %w", err)
	}
	network, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decode EC2 network metadata: expected an object, got %s", jsonKind(doc))
	}
	return EC2Config(network, opts)
}

// EC2Config is EC2 for already decoded metadata.
func EC2Config(network map[string]any, opts Options) (*model.Network, error) {
	cfg, order, convErr := EC2NetworkConfig(network, opts.MACs)
	if cfg == nil {
		return nil, convErr
	}
	n, parseErr := v2(cfg, opts, ethernetsInOrder(order))
	return refuse(n, errors.Join(convErr, parseErr))
}

// ethernetsInOrder is the key order of a v2 document a converter built
// with only ethernets, named in order: what a YAML file would have told
// the v2 parser.
func ethernetsInOrder(order []string) func(keys ...string) []string {
	return func(keys ...string) []string {
		switch {
		case len(keys) == 0:
			return []string{"version", "ethernets"}
		case len(keys) == 1 && keys[0] == "ethernets":
			return order
		}
		return nil
	}
}

// EC2NetworkConfig turns EC2's per-NIC metadata into a cloud-init network
// config v2 document, as cloud-init 22.4.2 does, and returns it with its
// ethernets' names in the order cloud-init adds them:
//
//   - Only NICs that are both on the machine (macs, MAC to name) and in
//     the metadata are configured, taken in MAC order; a NIC unknown to
//     either side is left out. Each is matched by MAC and renamed
//     (set-name) to its name on the machine.
//   - Every one of them gets DHCPv4, and DHCPv6 when the metadata lists
//     IPv6 addresses (ipv6s) for it.
//   - With more than one NIC, DHCP routes get metric 100 times
//     (device-number + 1), so that the primary NIC (device-number 0) wins
//     the default route; a NIC without a device-number takes the previous
//     NIC's number + 1.
//   - Secondary addresses (every local-ipv4s and ipv6s entry but the
//     first, which DHCP brings) are added as static addresses with the
//     prefix of the NIC's subnet-ipv4-cidr-block (/24 when it has none) or
//     subnet-ipv6-cidr-block (/128), sorted as strings.
//
// The returned error names each NIC (by MAC) or key that could not be
// used; the document holds everything else. It is nil only when the
// metadata has no interfaces.macs mapping at all, or when macs is empty:
// cloud-init then asks the running system for its NICs, which a parser
// cannot do.
func EC2NetworkConfig(network map[string]any, macs map[string]string) (cfg map[string]any, order []string, err error) {
	interfaces, ok := network["interfaces"].(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("convert EC2 network metadata: key \"interfaces\": expected an object, got %s", jsonKind(network["interfaces"]))
	}
	macsMetadata, ok := interfaces["macs"].(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("convert EC2 network metadata: key \"interfaces.macs\": expected an object, got %s", jsonKind(interfaces["macs"]))
	}
	if len(macs) == 0 {
		// cloud-init asks the running system here; a parser cannot, and
		// an empty config would silently unconfigure the machine.
		return nil, nil, errors.New("convert EC2 network metadata: no NIC of this machine is known by MAC (the metadata names NICs by MAC only)")
	}

	machine := make([]string, 0, len(macs))
	names := make(map[string]string, len(macs))
	for mac, name := range macs {
		mac = strings.ToLower(mac)
		machine = append(machine, mac)
		names[mac] = name
	}
	sort.Strings(machine)

	var errs []error
	ethernets := map[string]any{}
	nicIndex := 0
	for _, mac := range machine {
		raw, known := macsMetadata[mac]
		if !known || raw == nil {
			continue // on the machine but not attached by EC2 (or not a NIC)
		}
		nicMetadata, ok := raw.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("interfaces.macs.%s: expected an object, got %s", label(mac), jsonKind(raw)))
			continue
		}
		if len(nicMetadata) == 0 {
			continue
		}
		if v, ok := nicMetadata["device-number"]; ok {
			deviceNumber, err := jsonInt(v)
			if err != nil {
				// cloud-init stops converting altogether here; the NIC
				// still gets DHCP, numbered as if the key were absent.
				errs = append(errs, fmt.Errorf("interfaces.macs.%s: key \"device-number\": %w", label(mac), err))
			} else {
				nicIndex = deviceNumber
			}
		}
		nicIndex++
		metric := map[string]any{"route-metric": int64(nicIndex) * 100}
		name := names[mac]
		device := map[string]any{
			"dhcp4":           true,
			"dhcp4-overrides": metric,
			"dhcp6":           false,
			"match":           map[string]any{"macaddress": mac},
			"set-name":        name,
		}
		if present(nicMetadata["ipv6s"]) {
			device["dhcp6"] = true
			device["dhcp6-overrides"] = metric
		}
		if addresses := ec2SecondaryAddresses(nicMetadata); len(addresses) > 0 {
			device["addresses"] = addresses
		}
		if _, seen := ethernets[name]; !seen {
			order = append(order, name)
		}
		ethernets[name] = device
	}
	if len(ethernets) == 1 {
		for _, device := range ethernets {
			delete(device.(map[string]any), "dhcp4-overrides")
			delete(device.(map[string]any), "dhcp6-overrides")
		}
	}
	cfg = map[string]any{"version": int64(2), "ethernets": ethernets}
	if len(errs) > 0 {
		err = fmt.Errorf("convert EC2 network metadata: %w", errors.Join(errs...))
	}
	return cfg, order, err
}

// ec2SecondaryAddresses lists a NIC's addresses beyond the first of each
// family as CIDRs. Metadata older than 2018-09-24 gives a single address
// as a plain string: it has no secondary addresses.
func ec2SecondaryAddresses(nicMetadata map[string]any) []any {
	var addresses []string
	for _, family := range []struct{ ips, cidr, defaultPrefix string }{
		{"local-ipv4s", "subnet-ipv4-cidr-block", "24"},
		{"ipv6s", "subnet-ipv6-cidr-block", "128"},
	} {
		ips, ok := nicMetadata[family.ips].([]any)
		if !ok || len(ips) < 2 {
			continue
		}
		prefix := family.defaultPrefix
		if cidr, ok := nicMetadata[family.cidr].(string); ok {
			// Whatever follows the one slash, as cloud-init takes it; the
			// v2 parser rejects a prefix that is not one.
			if parts := strings.Split(cidr, "/"); len(parts) == 2 {
				prefix = parts[1]
			}
		}
		for _, ip := range ips[1:] {
			addresses = append(addresses, jsonStr(ip)+"/"+prefix)
		}
	}
	sort.Strings(addresses)
	out := make([]any, len(addresses))
	for i, a := range addresses {
		out[i] = a
	}
	return out
}

// present is Python's truthiness for a decoded JSON value.
func present(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	case json.Number:
		f, err := x.Float64()
		return err != nil || f != 0
	}
	return true
}

// jsonInt reads a device number the way Python's int() does for the
// values EC2 metadata holds: a decimal string (spaces allowed) or an
// integral number.
func jsonInt(v any) (int, error) {
	var n int
	var err error
	switch x := v.(type) {
	case json.Number:
		var i int64
		if i, err = x.Int64(); err == nil {
			n, err = toInt(i)
		} else if f, ferr := x.Float64(); ferr == nil {
			n, err = toInt(f)
		}
	case string:
		n, err = toInt(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(x), "+")))
		if err != nil {
			err = fmt.Errorf("%s is not an integer", quoteValue(x))
		}
	case bool, int64, int, float64:
		n, err = toInt(x)
	default:
		err = fmt.Errorf("expected an integer, got %s", jsonKind(v))
	}
	return n, err
}

func jsonStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return pyfmt.Str(v)
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number, float64, int64, int:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("a %T", v)
}
