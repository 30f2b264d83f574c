package live

import (
	"context"
	"errors"
	"fmt"

	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/link"
	"github.com/seedinit/seedinit/netup/model"
)

// BringUp is PID 1's step before the network datasources: it renames NICs
// by the MACs n names (n may be nil when no local datasource gave a
// config) and opts.Rules, then runs DHCPv4 on the candidate NICs in
// parallel within ctx and applies the first lease (address, option 121 or
// 3 routes, MTU). The candidates are the interfaces n asks DHCP for, or,
// when n asks for none, every Ethernet NIC. The returned result holds the
// lease (Leases[0]) and resolv.conf contents; a nil lease comes with an
// error. Call Lease.Remove to take the ephemeral network down again.
func BringUp(ctx context.Context, n *model.Network, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	res := &Result{}
	var errs []error
	renamed, err := link.Rename(append(link.RulesFromNetwork(n), opts.Rules...))
	res.Renamed = renamed
	if err != nil {
		errs = append(errs, err)
	}
	for _, r := range renamed {
		opts.Log.Info("renamed network device", "mac", r.MAC, "from", r.From, "to", r.To)
	}
	candidates := dhcpInterfaces(n)
	if len(candidates) == 0 {
		nics, err := link.Discover(opts.SysClassNet)
		if err != nil {
			errs = append(errs, err)
		}
		for _, nic := range nics {
			if nic.Type == 1 && nic.MAC != "" && !nic.Bond && !nic.Bridge && !nic.VLAN {
				candidates = append(candidates, nic.Name)
			}
		}
	}
	if len(candidates) == 0 {
		return res, errors.Join(append(errs, errors.New("bring up network: no NIC to run DHCP on"))...)
	}
	lease, err := dhcp.AcquireAny(ctx, candidates, opts.DHCP)
	if err != nil {
		return res, errors.Join(append(errs, fmt.Errorf("bring up network: %w", err))...)
	}
	if err := lease.Apply(); err != nil {
		errs = append(errs, err)
	}
	res.Leases = []*dhcp.Lease{lease}
	res.ResolvConf = lease.ResolvConf()
	return res, errors.Join(errs...)
}

// dhcpInterfaces lists the physical interfaces of n with a DHCPv4 subnet.
func dhcpInterfaces(n *model.Network) []string {
	if n == nil {
		return nil
	}
	var names []string
	for _, iface := range n.Interfaces {
		if iface.Type != model.TypePhysical || iface.BondMaster != "" {
			continue
		}
		for _, s := range iface.Subnets {
			if s.Type == model.SubnetDHCP || s.Type == model.SubnetDHCP4 {
				names = append(names, iface.Name)
				break
			}
		}
	}
	return names
}
