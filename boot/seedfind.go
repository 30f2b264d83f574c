package boot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seedinit/seedinit/apply/disk"
	"github.com/seedinit/seedinit/internal/devprobe"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/netup"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/link"
	"github.com/seedinit/seedinit/netup/live"
	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds"
)

// findSeed runs the datasource search: the local sources first (seed
// directories, cidata and config-2 disks, the command line); when none
// answers and network sources are left, an ephemeral DHCP lease on the
// NICs, then the network sources in parallel, all within the budget.
func (p *PID1) findSeed(root *rootfs.Root) (*seed.Seed, error) {
	env, cfgErr := ds.HostEnv(root, p.Log)
	if cfgErr != nil {
		p.Log.Warn("datasource configuration", "error", cfgErr.Error())
	}
	// No device is opened behind the search's back from here (the stages
	// may partition the disks); the search reads what was read early.
	p.labels.Stop()
	env.Devices = &ds.SysDevices{Early: p.labels}
	ctx := context.Background()
	var res *ds.Result
	err := p.Timeline.Do("datasources: local", func() error {
		var err error
		res, err = ds.DetectStage(ctx, env, p.Opts.Budget, ds.StageLocal)
		return err
	})
	if res != nil && res.Seed != nil {
		return res.Seed, nil
	}
	p.localSourcesFailed = nil
	if res != nil {
		for _, a := range res.Attempts {
			// A seed medium the machine has that could not be read.
			if a.Probe == ds.Found && a.Outcome == ds.OutcomeFailed {
				p.localSourcesFailed = append(p.localSourcesFailed, a.Datasource+": "+a.Detail)
			}
		}
	}
	if res == nil || !res.WantsNetwork {
		return nil, err
	}
	if ds.AnyLinkLocal(res.NetworkCandidates) {
		// A microVM's metadata service answers on the link, where a DHCP
		// server seldom is: tried first, it spares the DHCP wait.
		if sd := p.searchOverLinkLocal(ctx, env); sd != nil {
			return sd, nil
		}
	}
	if p.networkFromKernelUp(ctx, env) {
		return p.searchNetworkSources(ctx, env)
	}
	haveNetwork := false
	p.Timeline.Do("ephemeral network (DHCP)", func() error {
		dctx, cancel := context.WithTimeout(ctx, dhcpBudget)
		defer cancel()
		// The DHCP client draws its transaction id from crypto/rand, which
		// blocks (past any deadline) until the kernel's pool is ready.
		if !waitPoolReady(dctx) {
			return errors.New("the random pool is not ready (no hardware RNG?); no DHCP")
		}
		up, err := live.BringUp(dctx, nil, live.Options{Log: p.Log, DHCP: dhcp.Options{Log: p.Log}})
		if up != nil && len(up.Leases) > 0 {
			p.ephemeral = up.Leases
			l := up.Leases[0]
			env.Interface, env.DHCPServer, env.DHCPSiteOptions = l.Interface, l.ServerID, l.SiteOptions
			p.Log.Info("ephemeral network up", "interface", l.Interface, "address", l.Address.String(), "server", l.ServerID.String())
			haveNetwork = true
			p.liveResolvConf = up.ResolvConf
			if len(up.ResolvConf) > 0 && p.Initramfs {
				// The initramfs's own resolver, for metadata URLs by name;
				// a real root's is the network module's, or, with no
				// network service there, writeRootResolvConf's.
				if err := os.WriteFile("/etc/resolv.conf", up.ResolvConf, 0o644); err != nil {
					p.Log.Warn("write the initramfs's resolv.conf", "error", err.Error())
				}
			}
			return nil
		}
		if err == nil {
			err = errors.New("no lease")
		}
		return err
	})
	if !haveNetwork {
		return nil, errors.New("no network: the network datasources were not tried")
	}
	err = p.Timeline.Do("datasources: network", func() error {
		var err error
		res, err = ds.DetectStage(ctx, env, p.Opts.Budget, ds.StageNetwork)
		return err
	})
	if res != nil && res.Seed != nil {
		return res.Seed, nil
	}
	return nil, err
}

// dhcpBudget bounds the ephemeral DHCP: a machine without a DHCP server
// must still boot quickly.
const dhcpBudget = 10 * time.Second

// searchOverLinkLocal runs the network search with an IPv4 link-local
// address on the first NIC and takes the address away after it: the
// instance's own network config comes from the seed.
func (p *PID1) searchOverLinkLocal(ctx context.Context, env *ds.Env) *seed.Seed {
	var ll *live.LinkLocal
	if p.Timeline.Do("ephemeral network (IPv4 link-local)", func() error {
		var err error
		ll, err = live.UpLinkLocal(live.Options{Log: p.Log})
		return err
	}) != nil {
		return nil
	}
	defer func() {
		if err := ll.Remove(); err != nil {
			p.Log.Warn("take the link-local address off", "interface", ll.Interface, "error", err.Error())
			return
		}
		p.Log.Info("IPv4 link-local address taken off", "interface", ll.Interface, "address", ll.Address.String())
	}()
	linkEnv := *env
	linkEnv.Interface = ll.Interface
	var res *ds.Result
	p.Timeline.Do("datasources: network, link-local", func() error {
		var err error
		res, err = ds.DetectStage(ctx, &linkEnv, p.Opts.Budget, ds.StageNetwork)
		return err
	})
	if res == nil {
		return nil
	}
	return res.Seed
}

// applyNetworkLive brings the instance's network config up with netlink,
// for images that have no network service of their own to read the files
// the network module renders. Failures are logged; the boot goes on.
func (p *PID1) applyNetworkLive(s *seed.Seed) error {
	s, up := p.withKernelNetwork(s)
	if up {
		return nil
	}
	kind, ok := netup.KindForFormat(s.NetworkFormat)
	// EC2's metadata asks for DHCP on each NIC, which the ephemeral
	// network has done. DigitalOcean's public addresses are static: a
	// machine with only this live config has no other way to them.
	if !ok || kind == netup.KindEC2 || len(s.NetworkConfig) == 0 {
		return nil
	}
	var macs []netup.MAC
	if nics, err := link.Discover(link.SysClassNet); err == nil {
		for _, n := range nics {
			if n.MAC != "" {
				macs = append(macs, netup.MAC{Name: n.Name, Address: n.MAC, Driver: n.Driver})
			}
		}
	}
	n, perr := netup.Parse(s.NetworkConfig, kind, macs)
	if n == nil {
		return perr
	}
	p.liveNet = n
	// The kernel would ask modprobe for bonding, 8021q or bridge, and an
	// initramfs has none: load them first.
	if p.modules != nil {
		want := map[string]string{model.TypeBond: "bonding", model.TypeVLAN: "8021q", model.TypeBridge: "bridge"}
		for _, iface := range n.Interfaces {
			if m := want[iface.Type]; m != "" {
				if err := p.modules.Load(m); err != nil {
					p.Log.Warn("kernel module for the network config", "module", m, "error", err.Error())
				}
				delete(want, iface.Type)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), dhcpBudget)
	defer cancel()
	res, err := live.Apply(ctx, n, live.Options{Log: p.Log, DHCP: dhcp.Options{Log: p.Log}})
	if res != nil {
		p.liveLeases, p.liveLeases6 = res.Leases, res.Leases6
		// The config's DNS, or its own leases': not the search's lease's,
		// which dropEphemeral may take off a NIC the config sets static.
		p.liveResolvConf = res.ResolvConf
		for _, r := range res.Renamed {
			p.Log.Info("renamed network device", "mac", r.MAC, "from", r.From, "to", r.To)
		}
		if err == nil {
			p.dropEphemeral(res)
		}
	}
	return errors.Join(perr, err)
}

// dropEphemeral takes the search's DHCP leases off the NICs that the
// instance's config, now applied, does not run DHCP on: their address and
// routes are not the instance's, as cloud-init tears its ephemeral
// network down. Only after a config applied without error, so that a NIC
// is never left with neither.
func (p *PID1) dropEphemeral(res *live.Result) {
	renamed := map[string]string{}
	for _, r := range res.Renamed {
		renamed[r.From] = r.To
	}
	for _, l := range p.ephemeral {
		if to, ok := renamed[l.Interface]; ok {
			l.Interface = to
		}
		if slices.Contains(res.DHCP, l.Interface) {
			continue
		}
		if err := l.Remove(); err != nil {
			p.Log.Warn("take the ephemeral lease off", "interface", l.Interface, "error", err.Error())
			continue
		}
		p.Log.Info("ephemeral lease taken off: the config does not run DHCP here", "interface", l.Interface, "address", l.Address.String())
	}
}

// FindRoot resolves root= specs: /dev paths as they are, and LABEL=,
// UUID=, PARTUUID=, PARTLABEL= by reading the filesystems' superblocks and
// the partition tables, since an initramfs has no udev to make
// /dev/disk/by-* links.
func FindRoot(spec string) (string, error) {
	if strings.HasPrefix(spec, "/dev/") && !strings.HasPrefix(spec, "/dev/disk/") {
		return FindDevPath(spec)
	}
	// Every disk's superblock or partition table is read: in a helper
	// PID 1 can abandon, since a device that never answers would hold
	// this thread, and then the exec of the real init, for good.
	var a resolveAnswer
	if err := devprobe.Call("resolve", spec, &a); err != nil {
		if errors.Is(err, devprobe.ErrStalled) {
			// Looked for again without the device that stalled.
			return "", fmt.Errorf("%w: %w", ErrNoDevice, err)
		}
		return "", err
	}
	if a.NotFound {
		return "", ErrNoDevice
	}
	if a.Error != "" {
		return "", errors.New(a.Error)
	}
	b := a.Dev
	p := "/dev/" + b.Name
	if _, err := os.Stat(p); err != nil {
		// devtmpfs makes the node; until it has, the device is not there.
		return "", errNodePending
	}
	return p, nil
}

// resolveAnswer is disk.Host.Resolve's answer as a device probe's.
type resolveAnswer struct {
	Dev      disk.BlockDev
	NotFound bool
	Error    string
}

// fstypeAnswer is probeFSTypeHere's answer as a device probe's.
type fstypeAnswer struct{ Type string }

func init() {
	devprobe.Handle("resolve", func(spec string, opening func(string) bool) (any, error) {
		host := disk.DefaultHost
		host.Opening = opening
		b, err := host.Resolve(spec)
		a := resolveAnswer{Dev: b, NotFound: errors.Is(err, disk.ErrNotFound)}
		if err != nil && !a.NotFound {
			a.Error = err.Error()
		}
		return a, nil
	})
	devprobe.Handle("fstype", func(dev string, opening func(string) bool) (any, error) {
		if !opening(filepath.Base(dev)) {
			return fstypeAnswer{}, nil
		}
		return fstypeAnswer{Type: probeFSTypeHere(dev)}, nil
	})
}

// errNodePending is FindRoot's ErrNoDevice for a device the kernel has
// but devtmpfs has not made the node of yet.
var errNodePending = fmt.Errorf("%w: its /dev node is not made yet", ErrNoDevice)

// rootPoller is WaitRoot's finder: find's scan of every disk's
// superblock or partition table is run again only when the kernel's
// block devices or their /dev nodes changed since a scan found nothing
// (the polls took a tenth of a second of a slow machine's CPU while the
// disk drivers were loading beside them). A device comes to sysfs a
// moment before devtmpfs has made its node, so the nodes count too.
type rootPoller struct {
	find    RootFinder
	devices func() string
	last    string // the devices of the last scan that found nothing
	scanned bool
}

func newRootPoller(find RootFinder) *rootPoller {
	host := disk.DefaultHost // FindRoot's
	return &rootPoller{find: find, devices: func() string {
		entries, _ := os.ReadDir(filepath.Join(host.Sys, "class", "block"))
		var b strings.Builder
		for _, e := range entries {
			b.WriteString(e.Name())
			if _, err := os.Stat(filepath.Join(host.Dev, e.Name())); err != nil {
				b.WriteString(" (no node)")
			}
			b.WriteByte('\n')
		}
		return b.String()
	}}
}

func (r *rootPoller) Find(spec string) (string, error) {
	devices := r.devices()
	if r.scanned && devices == r.last {
		return "", ErrNoDevice
	}
	dev, err := r.find(spec)
	// A scan cut short by a device that stalled is no answer: the next
	// one runs without that device.
	r.scanned = errors.Is(err, ErrNoDevice) && !errors.Is(err, errNodePending) && !errors.Is(err, devprobe.ErrStalled)
	r.last = devices
	return dev, err
}
