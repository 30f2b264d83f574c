// Package ds finds the instance's datasource and fetches its seed:
// metadata, user-data, vendor-data and network config. Each cloud lives in
// its own file and registers itself; Detect runs the search the way
// cloud-init's ds-identify and find_source do, with a hard time budget.
// Datasources return data and never write anything.
package ds

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sort"
	"strings"
	"sync"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
)

// Verdict is what a probe concluded, with ds-identify's three answers.
type Verdict int

const (
	// NotFound: the platform is certainly not this one; Detect skips it.
	NotFound Verdict = iota
	// Maybe: nothing rules it out (a network source with no platform
	// marker); Detect tries it only when it is configured explicitly or
	// nothing better was found.
	Maybe
	// Found: a positive marker (a labelled disk, a DMI string, a seed
	// directory, a ds= on the command line).
	Found
)

func (v Verdict) String() string {
	switch v {
	case Found:
		return "found"
	case Maybe:
		return "maybe"
	}
	return "not found"
}

// Evidence is a probe's answer and the facts behind it, printed by
// `seedinit detect`.
type Evidence struct {
	Verdict Verdict
	// Reason names what was seen or missed: "label config-2 on /dev/sr0",
	// "DMI sys_vendor \"Amazon EC2\"", "no cidata disk or seed directory".
	Reason string
	// Network is set by a local source whose data points at a URL
	// (NoCloud's seedfrom=http://...): fetching it needs the network.
	Network bool
}

// Datasource is one kind of source of instance data.
type Datasource interface {
	// Name is cloud-init's name: "NoCloud", "ConfigDrive", "OpenStack",
	// "Ec2", ... as used in datasource_list and shown by status.
	Name() string
	// NeedsNetwork is true for sources that must have a network up
	// (metadata services); they are tried in the network stage, in
	// parallel.
	NeedsNetwork() bool
	// Probe is cheap and bounded: it looks at DMI, the command line, block
	// device labels and the seed directories, never at the network.
	Probe(ctx context.Context, env *Env) (Evidence, error)
	// Fetch reads the whole seed. It writes nothing and honours ctx.
	Fetch(ctx context.Context, env *Env) (*seed.Seed, error)
}

// Env holds the seams through which datasources see the machine; tests
// fill it with fakes.
type Env struct {
	// Root is the target root, for the seed directories
	// (/var/lib/cloud/seed/...); nil means there is none.
	Root *rootfs.Root
	// DMI reads SMBIOS fields; nil reads nothing.
	DMI DMI
	// Cmdline is the kernel command line (/proc/cmdline).
	Cmdline string
	// Devices lists block devices with their filesystem labels and opens
	// them for reading without mounting; nil means no devices.
	Devices Devices
	// Fetcher does every HTTP request; nil uses NewFetcher's defaults.
	Fetcher *Fetcher
	// Config is datasource_list and datasource: settings from the target's
	// cloud.cfg, plus seedinit's own.
	Config Config
	// Endpoint overrides a network source's metadata URL (fetch --url),
	// for the one datasource being fetched.
	Endpoint string
	// Interface is the link the ephemeral network came up on, for IPv6
	// link-local metadata addresses (fe80::a9fe:a9fe%eth0).
	Interface string
	// DHCPServer is the address of the server that gave the lease
	// (CloudStack's metadata host); the zero Addr when unknown.
	DHCPServer netip.Addr
	// DHCPSiteOptions are that lease's site-specific options (224 to
	// 254): Azure's 245 is its wireserver's address.
	DHCPSiteOptions map[uint8][]byte
	// HypervisorUUID is /sys/hypervisor/uuid: Xen guests on EC2 say "ec2..."
	// there rather than in DMI.
	HypervisorUUID string
	// FwCfgDir is QEMU's fw_cfg entries by name,
	// /sys/firmware/qemu_fw_cfg/by_name unless set.
	FwCfgDir string
	// Log receives progress; nil discards it. Never give it secrets.
	Log *slog.Logger
}

// Logger returns Log or a logger that discards.
func (e *Env) Logger() *slog.Logger {
	if e == nil || e.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return e.Log
}

// HTTP returns the Fetcher, creating the default one when unset.
func (e *Env) HTTP() *Fetcher {
	if e.Fetcher == nil {
		e.Fetcher = NewFetcher(e.Config.Fetch, e.Logger())
	}
	return e.Fetcher
}

// DMIField reads one /sys/class/dmi/id field, "" when unknown.
func (e *Env) DMIField(name string) string {
	if e == nil || e.DMI == nil {
		return ""
	}
	return strings.TrimSpace(e.DMI.Field(name))
}

// Settings is the datasource's own section, datasource: {NAME: {...}}.
func (e *Env) Settings(name string) map[string]any {
	return e.Config.Settings(name)
}

// DMI reads SMBIOS fields by their /sys/class/dmi/id names: sys_vendor,
// product_name, product_serial, product_uuid, chassis_asset_tag,
// board_vendor, ...
type DMI interface {
	Field(name string) string
}

// MapDMI is a DMI of fixed values, for tests and for ds-identify-like
// overrides.
type MapDMI map[string]string

// Field returns the value stored under name.
func (m MapDMI) Field(name string) string { return m[name] }

// BlockDevice is a device with a filesystem that may hold a seed.
type BlockDevice struct {
	// Path is the device node, "/dev/sr0".
	Path string
	// FSType is "iso9660" or "vfat" ("" when unknown).
	FSType string
	// Label is the filesystem label as stored ("config-2", "CIDATA").
	Label string
}

// Devices finds block devices and opens them for reading.
type Devices interface {
	// List returns the devices whose filesystem label could be read.
	List(ctx context.Context) ([]BlockDevice, error)
	// Open opens a device for reading; size is its length in bytes.
	Open(path string) (r io.ReaderAt, size int64, closer io.Closer, err error)
}

// ByLabel returns the devices whose label matches one of labels, compared
// without case as ds-identify does.
func ByLabel(ctx context.Context, d Devices, labels ...string) ([]BlockDevice, error) {
	if d == nil {
		return nil, nil
	}
	all, err := d.List(ctx)
	var out []BlockDevice
	for _, bd := range all {
		for _, l := range labels {
			if strings.EqualFold(bd.Label, l) {
				out = append(out, bd)
				break
			}
		}
	}
	return out, err
}

var (
	registryMu sync.Mutex
	registry   = map[string]Datasource{}
)

// LinkLocalSource is a network source whose service answers on a
// link-local address to a guest that no DHCP server serves (Firecracker's
// MMDS): PID 1 gives a NIC an IPv4 link-local address to reach it.
type LinkLocalSource interface {
	AnswersOnLinkLocal() bool
}

// AnyLinkLocal reports whether one of the named sources is a
// LinkLocalSource.
func AnyLinkLocal(names []string) bool {
	for _, n := range names {
		if d, ok := Lookup(n); ok {
			if l, ok := d.(LinkLocalSource); ok && l.AnswersOnLinkLocal() {
				return true
			}
		}
	}
	return false
}

// Register adds a datasource; each cloud's file calls it from init().
// Registering a name twice panics: it is a programming error.
func Register(d Datasource) {
	registryMu.Lock()
	defer registryMu.Unlock()
	key := strings.ToLower(d.Name())
	if _, dup := registry[key]; dup {
		panic(fmt.Sprintf("ds: datasource %q registered twice", d.Name()))
	}
	registry[key] = d
}

// All returns every registered datasource in cloud-init's default
// datasource_list order, then any others by name.
func All() []Datasource {
	registryMu.Lock()
	defer registryMu.Unlock()
	rank := map[string]int{}
	for i, n := range DefaultList {
		rank[strings.ToLower(n)] = i
	}
	out := make([]Datasource, 0, len(registry))
	for _, d := range registry {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, iok := rank[strings.ToLower(out[i].Name())]
		rj, jok := rank[strings.ToLower(out[j].Name())]
		switch {
		case iok && jok:
			return ri < rj
		case iok != jok:
			return iok
		}
		return out[i].Name() < out[j].Name()
	})
	return out
}

// Lookup finds a registered datasource by name, without case; cloud-init's
// aliases ("nocloud-net", "configdrive", "ec2") are accepted.
func Lookup(name string) (Datasource, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	key := strings.ToLower(strings.TrimSpace(name))
	if alias, ok := nameAliases[key]; ok {
		key = alias
	}
	d, ok := registry[key]
	return d, ok
}

// nameAliases maps other spellings seen in ds= and datasource_list to the
// registered (lower-cased) names.
var nameAliases = map[string]string{
	"nocloud-net":  "nocloud",
	"nocloudnet":   "nocloud",
	"config-drive": "configdrive",
	"config_drive": "configdrive",
}

// DefaultList is cloud-init 22.4's built-in datasource_list.
var DefaultList = []string{
	"NoCloud", "ConfigDrive", "LXD", "OpenNebula", "DigitalOcean", "Azure",
	"AltCloud", "OVF", "MAAS", "GCE", "OpenStack", "AliYun", "Vultr", "Ec2",
	"CloudSigma", "CloudStack", "SmartOS", "Bigstep", "Scaleway", "Hetzner",
	"IBMCloud", "Oracle", "Exoscale", "RbxCloud", "UpCloud", "VMware", "NWCS",
	"None",
}
