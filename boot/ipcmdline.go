package boot

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/seedinit/seedinit/netup"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/link"
	"github.com/seedinit/seedinit/netup/live"
	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds"
)

// The kernel command line's network (dracut's ip=, nameserver=, ifname=
// and cloud-init's network-config=; netup.KernelNetwork) is how a PXE or
// bare-metal boot gives a machine its address before any metadata can be
// reached. PID 1 brings it up in place of the search's DHCP when it has
// a static address or is a whole network-config=, and it is the
// instance's network over the datasource's, as cloud-init orders them
// (the command line, then the initramfs's ip=, then the system config,
// then the datasource; no merging).

// kernelNetwork is the running kernel's, read once.
var kernelNetwork = sync.OnceValue(func() *netup.KernelNetwork {
	return netup.ParseKernelNetwork(readCmdline())
})

// kernelNetworkUp says the command line's network was brought up for the
// search: it is the instance's, and is not applied again.
var kernelNetworkUp bool

// machineNICs are the NICs as the network config's parser names them.
func machineNICs() []netup.MAC {
	var macs []netup.MAC
	if nics, err := link.Discover(link.SysClassNet); err == nil {
		for _, n := range nics {
			if n.MAC != "" {
				macs = append(macs, netup.MAC{Name: n.Name, Address: n.MAC, Driver: n.Driver})
			}
		}
	}
	return macs
}

// networkFromKernelUp brings the command line's network up for the
// network search when it gives a static address or a whole
// network-config=, and says whether the search may go on over it. A
// config that fails leaves the search to its own DHCP.
func (p *PID1) networkFromKernelUp(ctx context.Context, env *ds.Env) bool {
	k := kernelNetwork()
	if k == nil {
		return false
	}
	for _, problem := range k.Problems {
		p.Log.Warn("kernel command line network: passed over", "problem", problem)
	}
	if !k.Static() && k.Config == nil {
		return false // DHCP only: the search's own DHCP does that
	}
	macs := machineNICs()
	doc, kind, source := k.Document(macs)
	if doc == nil {
		return false
	}
	up := false
	p.Timeline.Do("network from the kernel command line", func() error {
		n, perr := netup.Parse(doc, kind, macs)
		if n == nil {
			return perr
		}
		dctx, cancel := context.WithTimeout(ctx, dhcpBudget)
		defer cancel()
		// The DHCP client draws its transaction id from crypto/rand.
		if wantsDHCP(n) && !waitPoolReady(dctx) {
			return errors.New("the random pool is not ready (no hardware RNG?); no DHCP")
		}
		res, err := live.Apply(dctx, n, live.Options{Log: p.Log, DHCP: dhcp.Options{Log: p.Log}})
		if res == nil {
			return errors.Join(perr, err)
		}
		for _, r := range res.Renamed {
			p.Log.Info("renamed network device", "mac", r.MAC, "from", r.From, "to", r.To)
		}
		if err != nil && len(res.Leases) == 0 {
			return errors.Join(perr, err)
		}
		p.liveNet, p.liveLeases, p.liveLeases6, p.liveResolvConf = n, res.Leases, res.Leases6, res.ResolvConf
		for _, iface := range n.Interfaces {
			if iface.Type == model.TypePhysical {
				env.Interface = iface.Name
				break
			}
		}
		if len(res.ResolvConf) > 0 && p.Initramfs {
			// The initramfs's own resolver, for metadata URLs by name.
			if werr := os.WriteFile("/etc/resolv.conf", res.ResolvConf, 0o644); werr != nil {
				p.Log.Warn("write the initramfs's resolv.conf", "error", werr.Error())
			}
		}
		up, kernelNetworkUp = true, true
		p.Log.Info("network up from the kernel command line", "source", source, "interface", env.Interface)
		return errors.Join(perr, err)
	})
	return up
}

func wantsDHCP(n *model.Network) bool {
	for _, iface := range n.Interfaces {
		for _, s := range iface.Subnets {
			switch s.Type {
			case model.SubnetDHCP, model.SubnetDHCP4, model.SubnetDHCP6, model.SubnetDHCP6Stateful, model.SubnetDHCP6Stateless:
				return true
			}
		}
	}
	return false
}

// searchNetworkSources is the network stage of the search, over the
// network that is up.
func (p *PID1) searchNetworkSources(ctx context.Context, env *ds.Env) (*seed.Seed, error) {
	var res *ds.Result
	err := p.Timeline.Do("datasources: network", func() error {
		var err error
		res, err = ds.DetectStage(ctx, env, p.Opts.Budget, ds.StageNetwork)
		return err
	})
	if res != nil && res.Seed != nil {
		return res.Seed, nil
	}
	return nil, err
}

// withKernelNetwork is s with the command line's network config in place
// of the datasource's (s itself is the seed as decided and is not
// changed), and whether that network is up already. The command line is
// the machine's own configuration, as /etc/cloud is the image's: it
// applies under any trust policy.
func (p *PID1) withKernelNetwork(s *seed.Seed) (*seed.Seed, bool) {
	k := kernelNetwork()
	if k == nil {
		return s, false
	}
	if kernelNetworkUp {
		return s, true
	}
	c := *s
	if k.Disabled {
		p.Log.Info("network config disabled by network-config=disabled on the kernel command line")
		c.NetworkConfig, c.NetworkFormat = nil, ""
		return &c, false
	}
	doc, _, source := k.Document(machineNICs())
	if doc == nil {
		return s, false
	}
	format, err := seed.NetworkConfigFormat(doc)
	if err != nil {
		p.Log.Warn("kernel command line network", "source", source, "error", err.Error())
		return s, false
	}
	if len(s.NetworkConfig) > 0 {
		p.Log.Info("network config from the kernel command line, not the datasource's (cloud-init's order)", "source", source)
	}
	c.NetworkConfig, c.NetworkFormat = doc, format
	return &c, false
}
