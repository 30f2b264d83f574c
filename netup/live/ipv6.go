package live

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	"github.com/seedinit/seedinit/internal/safego"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/model"
)

// ipv6Plan is what an interface's IPv6 subnets ask of the live network,
// following the meaning cloud-init's renderers give the subnet types:
// dhcp6 and ipv6_dhcpv6-stateful get an address from DHCPv6 (the default
// route still comes from router advertisements), ipv6_slaac gets its
// address from router advertisements, and ipv6_dhcpv6-stateless gets its
// address from router advertisements and only DNS from DHCPv6.
type ipv6Plan struct {
	iface     string
	stateful  bool
	stateless bool
	slaac     bool
}

func (p ipv6Plan) wanted() bool { return p.stateful || p.stateless || p.slaac }

// prepareIPv6 works out an interface's plan and sets accept_ra before the
// link comes up, so that the router solicitation sent on link-up is
// answered: as the config's accept-ra says, else on when a subnet needs
// router advertisements. A subnet that needs them while accept-ra is
// false is reported and not waited for.
func prepareIPv6(iface *model.Interface) (ipv6Plan, []error) {
	plan := ipv6Plan{iface: iface.Name}
	if iface.BondMaster != "" {
		return plan, nil
	}
	for _, s := range iface.Subnets {
		switch s.Type {
		case model.SubnetDHCP6, model.SubnetDHCP6Stateful:
			plan.stateful = true
		case model.SubnetDHCP6Stateless:
			plan.stateless = true
		case model.SubnetSLAAC:
			plan.slaac = true
		}
	}
	needsRA := plan.slaac || plan.stateless
	var errs []error
	switch {
	case iface.AcceptRA != nil:
		if err := dhcp.SetAcceptRA(iface.Name, *iface.AcceptRA); err != nil {
			errs = append(errs, fmt.Errorf("configure %s accept-ra: %w", iface.Name, err))
		}
		if needsRA && !*iface.AcceptRA {
			errs = append(errs, fmt.Errorf("configure %s: its SLAAC subnet needs router advertisements but accept-ra is false; not waiting for one", iface.Name))
			// A stateless subnet still asks DHCPv6 for DNS.
			plan.slaac = false
			needsRA = false
		}
	case needsRA:
		if err := dhcp.SetAcceptRA(iface.Name, true); err != nil {
			errs = append(errs, fmt.Errorf("configure %s for SLAAC: %w", iface.Name, err))
		}
	}
	if needsRA && plan.stateless {
		plan.slaac = true
	}
	return plan, errs
}

type ipv6Outcome struct {
	leases []*dhcp.Lease6
	slaac  map[string][]netip.Prefix
	errs   []error
}

// runIPv6 carries out the plans on every interface at once, within ctx
// and the bounds in opts, applying the stateful leases.
func runIPv6(ctx context.Context, plans []ipv6Plan, opts Options) ipv6Outcome {
	out := ipv6Outcome{slaac: map[string][]netip.Prefix{}}
	if len(plans) == 0 {
		out.slaac = nil
		return out
	}
	var mu sync.Mutex
	record := func(lease *dhcp.Lease6, slaac []netip.Prefix, iface string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if lease != nil {
			out.leases = append(out.leases, lease)
		}
		if len(slaac) > 0 {
			out.slaac[iface] = slaac
		}
		if err != nil {
			out.errs = append(out.errs, err)
		}
	}
	var wg sync.WaitGroup
	for _, plan := range plans {
		wg.Add(1)
		safego.Go("ipv6 on "+plan.iface, func() {
			defer wg.Done()
			if plan.slaac {
				addrs, err := dhcp.WaitSLAAC(ctx, plan.iface, opts.SLAACTimeout)
				if err == nil {
					opts.Log.Info("slaac address", "interface", plan.iface, "addresses", addrs)
				}
				record(nil, addrs, plan.iface, err)
			}
			if plan.stateless {
				lease, err := dhcp.Inform6(ctx, plan.iface, opts.DHCP)
				record(lease, nil, plan.iface, err)
			}
			if plan.stateful {
				lease, err := dhcp.Acquire6(ctx, plan.iface, opts.DHCP)
				if lease != nil {
					if applyErr := lease.Apply(); applyErr != nil {
						record(nil, nil, plan.iface, applyErr)
					}
				}
				record(lease, nil, plan.iface, err)
			}
		}, func(err error) { record(nil, nil, plan.iface, err) })
	}
	wg.Wait()
	if len(out.slaac) == 0 {
		out.slaac = nil
	}
	return out
}
