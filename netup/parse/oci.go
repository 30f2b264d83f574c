package parse

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
)

// oracleVNICMTU is the MTU cloud-init gives every VNIC it configures from
// Oracle's metadata.
const oracleVNICMTU = 9000

// OracleVNICs reads Oracle Cloud's VNIC list (/opc/v2/vnics/, as the
// Oracle datasource keeps it) into the network model. It follows
// cloud-init 22.4.2's DataSourceOracle.network_config for an instance
// whose root is not on iSCSI (seedinit's initramfs boots none that is):
// see OracleVNICsNetworkConfig.
func OracleVNICs(data []byte, opts Options) (*model.Network, error) {
	cfg, convErr := OracleVNICsNetworkConfig(data, opts.MACs)
	if cfg == nil {
		return nil, convErr
	}
	n, parseErr := v1(cfg, opts)
	return refuse(n, errors.Join(convErr, parseErr))
}

// OracleVNICsNetworkConfig turns the VNIC list into the cloud-init network
// config v1 document cloud-init 22.4.2 builds from it when the instance
// has no iSCSI root: every VNIC, in the list's order, is matched by its
// macAddr among the machine's NICs (macs, MAC to name, any case) and
// configured with MTU 9000; the first (the primary VNIC) takes DHCP, the
// others their privateIp as a static address with the prefix length of
// subnetCidrBlock. configure_secondary_nics does not matter then:
// cloud-init configures every VNIC whenever it configures the primary from
// the metadata.
//
// A VNIC whose MAC is not on the machine is left out, as in cloud-init,
// and named in the returned error. Where cloud-init stops at the first
// VNIC it cannot read (not an object, no string macAddr, privateIp or
// subnetCidrBlock, a subnet with host bits set) and keeps the VNICs
// before it, this leaves that one out, names it in the error, and goes
// on with the rest. cloud-init's check for virtio net_failover masters
// (which drops their MAC match) is not made. cfg is nil only when the
// data is not a JSON list or macs is empty.
func OracleVNICsNetworkConfig(data []byte, macs map[string]string) (cfg map[string]any, err error) {
	doc, err := decodePythonJSON(data)
	if err != nil {
		return nil, fmt.Errorf("decode Oracle VNIC metadata: %w", err)
	}
	vnics, ok := doc.([]any)
	if !ok {
		return nil, fmt.Errorf("decode Oracle VNIC metadata: expected a list, got %s", jsonKind(doc))
	}
	if len(macs) == 0 {
		return nil, errors.New("convert Oracle VNIC metadata: no NIC of this machine is known by MAC (the metadata names NICs by MAC only)")
	}
	names := make(map[string]string, len(macs))
	for mac, name := range macs {
		names[strings.ToLower(mac)] = name
	}
	var errs []error
	items := []any{}
	for i, raw := range vnics {
		item, err := oracleVNIC(raw, i == 0, names)
		if err != nil {
			errs = append(errs, fmt.Errorf("VNIC %d: %w", i, err))
			continue
		}
		items = append(items, item)
	}
	cfg = map[string]any{"version": int64(1), "config": items}
	if len(errs) > 0 {
		err = fmt.Errorf("convert Oracle VNIC metadata: %w", errors.Join(errs...))
	}
	return cfg, err
}

// oracleVNIC builds the v1 physical item for one VNIC.
func oracleVNIC(raw any, primary bool, names map[string]string) (map[string]any, error) {
	vnic, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("expected an object, got %s", jsonKind(raw))
	}
	field := func(key string) (string, error) {
		s, ok := vnic[key].(string)
		if !ok {
			return "", fmt.Errorf("key %q: expected a string, got %s", key, jsonKind(vnic[key]))
		}
		return s, nil
	}
	mac, err := field("macAddr")
	if err != nil {
		return nil, err
	}
	mac = strings.ToLower(mac)
	name, ok := names[mac]
	if !ok {
		return nil, fmt.Errorf("no NIC with MAC %s on this machine", label(mac))
	}
	block, err := field("subnetCidrBlock")
	if err != nil {
		return nil, err
	}
	subnet, err := netip.ParsePrefix(block)
	if err != nil || subnet.Masked() != subnet {
		return nil, fmt.Errorf("key \"subnetCidrBlock\": %s is not a network", quoteValue(block))
	}
	item := map[string]any{"name": name, "type": "physical", "mac_address": mac, "mtu": int64(oracleVNICMTU)}
	if primary {
		item["subnets"] = []any{map[string]any{"type": "dhcp"}}
		return item, nil
	}
	ip, err := field("privateIp")
	if err != nil {
		return nil, err
	}
	item["subnets"] = []any{map[string]any{"type": "static", "address": fmt.Sprintf("%s/%d", ip, subnet.Bits())}}
	return item, nil
}
