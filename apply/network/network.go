// Package network is the module that renders the instance's network
// configuration into the target root in the local stage, for the OS's own
// network stack to bring up, as cloud-init's Init.apply_network_config
// does: it picks the configuration (system config, then the datasource's,
// then a DHCP fallback on the first NIC), honours
// "network: {config: disabled}", picks a renderer by what the target
// has, and writes the files.
package network

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/netup"
	"github.com/seedinit/seedinit/netup/link"
	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/netup/parse"
	"github.com/seedinit/seedinit/netup/render"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// ModuleName is the name the stages runner lists in the local stage.
const ModuleName = "network"

func init() {
	apply.Register(apply.Module{
		Name:      ModuleName,
		Frequency: apply.PerInstance,
		Keys:      []string{"network"},
		Run:       run,
	})
}

// Renderer names, as cloud-init's system_info.network.renderers spells
// them.
const (
	RendererENI       = "eni"
	RendererSysconfig = "sysconfig"
	RendererNetplan   = "netplan"
	RendererNetworkd  = "networkd"
)

// defaultRenderers is cloud-init 22.4's priority order.
var defaultRenderers = []string{RendererENI, RendererSysconfig, RendererNetplan, RendererNetworkd}

// sysClassNet is where the fallback looks for NICs; tests point it at a
// fake tree.
var sysClassNet = link.SysClassNet

func run(ctx context.Context, env *apply.Env) error {
	system, sysErr := readSystemNetwork(env.Root)
	if sysErr != nil {
		env.Warn("read system network config: %v", sysErr)
	}
	kernel := kernelConfig(env)
	if kernel != nil && kernel.disabled {
		return apply.Skip("network configuration is disabled by network-config=disabled on the kernel command line")
	}
	if kernel == nil && (disabled(system) || disabled(env.Config["network"])) {
		return apply.Skip("network configuration is disabled (network: {config: disabled})")
	}

	var macs []netup.MAC
	var nics []link.NIC
	if env.Sys != nil && env.Sys.Live() {
		var err error
		nics, err = link.Discover(sysClassNet)
		if err != nil {
			env.Warn("discover network devices: %v", err)
		}
		for _, nic := range nics {
			if nic.MAC != "" {
				macs = append(macs, netup.MAC{Name: nic.Name, Address: nic.MAC, Driver: nic.Driver})
			}
		}
	}

	var n *model.Network
	var parseErr error
	var source string
	if kernel != nil {
		source = kernel.source
		n, parseErr = netup.Parse(kernel.raw, kernel.kind, macs)
	} else if m, ok := system.(map[string]any); ok && m["version"] != nil {
		// cloud-init's order for most datasources: a network config in
		// the system config (cloud.cfg, cloud.cfg.d) wins over the
		// datasource's.
		source = "system config"
		opts := parse.Options{MACs: map[string]string{}}
		for _, m := range macs {
			opts.MACs[strings.ToLower(m.Address)] = m.Name
		}
		n, parseErr = parse.Config(m, opts)
	} else {
		raw, kind := datasourceConfig(env)
		source = "datasource"
		if byMAC[kind] && len(macs) == 0 {
			// The cloud's config is per MAC of this machine's NICs:
			// offline there are none to name.
			return apply.Skip("%s network metadata names NICs by their MACs and this target's NICs are not known (not the running system)", env.Seed.Datasource)
		}
		if raw == nil {
			raw, kind, source = fallbackConfig(nics), netup.KindYAML, "fallback"
			if raw == nil {
				return apply.Skip("no network configuration in the system config or the datasource, and no NIC to fall back to DHCP on")
			}
		}
		n, parseErr = netup.Parse(raw, kind, macs)
	}
	if errors.Is(parseErr, netup.ErrDisabled) {
		return apply.Skip("network configuration is disabled by the %s", source)
	}
	if n == nil {
		return fmt.Errorf("parse network config from the %s: %w", source, parseErr)
	}

	renderer, err := chooseRenderer(env)
	if err != nil {
		if errors.Is(err, errNoRenderer) {
			// A busybox appliance has no network service to read files;
			// PID 1 applied the config live already.
			return apply.Skip("%v", err)
		}
		return errors.Join(parseErr, err)
	}
	files, renderErr := netup.Render(n, renderer)
	if files == nil {
		return errors.Join(parseErr, fmt.Errorf("render network config from the %s as %s: %w", source, renderer, renderErr))
	}
	if renderer != RendererSysconfig {
		resolv, err := resolvConf(env.Root, n)
		if err != nil {
			return errors.Join(parseErr, renderErr, err)
		}
		if resolv != nil {
			files[render.ResolvConfPath] = resolv
		}
	}
	writeErr := writeFiles(env, files)
	env.Log.Info("network config rendered", "source", source, "renderer", renderer, "files", len(files))
	return errors.Join(parseErr, renderErr, writeErr)
}

// byMAC lists the input kinds that name NICs by MAC only.
var byMAC = map[string]bool{netup.KindEC2: true, netup.KindDigitalOcean: true, netup.KindVultr: true, netup.KindOracleVNICs: true}

// disabled reports a "network" value of {config: disabled}.
func disabled(network any) bool {
	m, ok := network.(map[string]any)
	if !ok {
		return false
	}
	c, _ := m["config"].(string)
	return c == "disabled"
}

// datasourceConfig returns the seed's network config and its input kind.
func datasourceConfig(env *apply.Env) (raw []byte, kind string) {
	if env.Seed == nil || len(bytes.TrimSpace(env.Seed.NetworkConfig)) == 0 {
		return nil, ""
	}
	raw = env.Seed.NetworkConfig
	kind, ok := netup.KindForFormat(env.Seed.NetworkFormat)
	if !ok {
		env.Warn("network config of format %q from the datasource is not converted by seedinit yet; using the fallback (DHCP on one NIC)", env.Seed.NetworkFormat)
		return nil, ""
	}
	if kind == netup.KindYAML && looksLikeNetworkData(raw) {
		kind = netup.KindNetworkDataJSON
	}
	return raw, kind
}

// looksLikeNetworkData tells OpenStack's network_data.json (links and
// networks at the top, no version) from a cloud-init config in JSON.
func looksLikeNetworkData(raw []byte) bool {
	v, err := yaml11.Load(raw)
	if err != nil {
		return false
	}
	m, ok := v.(map[string]any)
	if !ok || m["version"] != nil || m["network"] != nil {
		return false
	}
	_, links := m["links"]
	_, networks := m["networks"]
	return links || networks
}

// fallbackConfig is cloud-init's generate_fallback_config: DHCPv4 on one
// NIC matched by MAC, eth0 first if there is one, else the first by name
// with a carrier, else the first by name.
func fallbackConfig(nics []link.NIC) []byte {
	var candidates []link.NIC
	for _, nic := range nics {
		if nic.MAC == "" || nic.Bond || nic.Bridge || nic.VLAN || nic.Type != 1 {
			continue
		}
		// The name and MAC are written into a YAML document below; the
		// kernel allows names (quotes, colons, newlines) that would
		// change its shape, and no config could name such a NIC anyway.
		if !parse.IsInterfaceName(nic.Name) || !parse.IsMAC(nic.MAC) {
			continue
		}
		candidates = append(candidates, nic)
	}
	if len(candidates) == 0 {
		return nil
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if (a.Name == "eth0") != (b.Name == "eth0") {
			return a.Name == "eth0"
		}
		if a.Carrier != b.Carrier {
			return a.Carrier
		}
		return a.Name < b.Name
	})
	nic := candidates[0]
	return fmt.Appendf(nil, "network:\n  version: 2\n  ethernets:\n    %s:\n      dhcp4: true\n      match:\n        macaddress: '%s'\n      set-name: %s\n", nic.Name, nic.MAC, nic.Name)
}

// errNoRenderer: the image has no network service seedinit can write for.
var errNoRenderer = errors.New("no network renderer")

// chooseRenderer takes system_info.network.renderers (or cloud-init's
// default order) and returns the first whose files the target has.
func chooseRenderer(env *apply.Env) (string, error) {
	order := defaultRenderers
	if info, ok, _ := env.Config.Map("system_info"); ok {
		if nw, ok, _ := info.Map("network"); ok {
			if list, ok, err := nw.StringList("renderers", false); err != nil {
				env.Warn("read system_info.network.renderers: %v", err)
			} else if ok {
				order = list
			}
		}
	}
	var unknown []string
	for _, name := range order {
		switch name {
		case RendererENI:
			if env.Root.Exists("/etc/network/interfaces") || env.Root.Exists("/etc/network/interfaces.d") {
				return netup.OutputENI, nil
			}
		case RendererSysconfig:
			if env.Root.Exists("/etc/sysconfig/network-scripts") {
				return netup.OutputSysconfig, nil
			}
		case RendererNetplan:
			if env.Root.Exists("/etc/netplan") || env.Root.Exists("/usr/sbin/netplan") {
				return netup.OutputNetplan, nil
			}
		case RendererNetworkd:
			if env.Root.Exists("/etc/systemd/network") {
				return netup.OutputNetworkd, nil
			}
		default:
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		env.Warn("network renderers seedinit does not have: %s", strings.Join(unknown, ", "))
	}
	return "", fmt.Errorf("choose network renderer: %w: the target has none of %s (no /etc/network/interfaces, /etc/sysconfig/network-scripts, /etc/netplan or /etc/systemd/network)", errNoRenderer, strings.Join(order, ", "))
}

// resolvConf returns /etc/resolv.conf contents from the global DNS
// settings, only for a target whose resolv.conf nothing else manages: not
// a symlink (systemd-resolved, resolvconf), and no resolvconf tool that
// ENI's dns-nameservers lines would feed. A nameserver or search domain
// that is not one word of printable characters is refused, as the
// renderers refuse one: it would add a line (another nameserver) of its
// own.
func resolvConf(root *rootfs.Root, n *model.Network) ([]byte, error) {
	dns := n.DNS
	if len(dns.Nameservers) == 0 {
		return nil, nil
	}
	if fi, err := root.Lstat("/etc/resolv.conf"); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, nil
	}
	for _, tool := range []string{"/sbin/resolvconf", "/usr/sbin/resolvconf", "/lib/systemd/systemd-resolved", "/usr/lib/systemd/systemd-resolved"} {
		if root.Exists(tool) {
			return nil, nil
		}
	}
	for _, v := range append(append([]string{}, dns.Nameservers...), dns.Search...) {
		if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return nil, fmt.Errorf("write /etc/resolv.conf: %s: not one word of printable characters", strconv.Quote(v))
		}
	}
	var b strings.Builder
	b.WriteString("# Generated by seedinit from the instance's network configuration\n")
	for _, ns := range dns.Nameservers {
		b.WriteString("nameserver " + ns + "\n")
	}
	if len(dns.Search) > 0 {
		b.WriteString("search " + strings.Join(dns.Search, " ") + "\n")
	}
	return []byte(b.String()), nil
}

func writeFiles(env *apply.Env, files render.Files) error {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		// The root keeps every write inside the target; a path with ".."
		// would still land elsewhere in it than the renderer meant.
		if err := netup.CheckOutputPath(name); err != nil {
			errs = append(errs, fmt.Errorf("write network config: %w", err))
			continue
		}
		p := "/" + name
		if err := env.Root.MkdirAll(path.Dir(p), 0o755, rootfs.Owner{}); err != nil {
			errs = append(errs, fmt.Errorf("write network config %s: %w", p, err))
			continue
		}
		changed, err := env.Root.WriteFileIfChanged(p, files[name], 0o644, rootfs.Owner{})
		if err != nil {
			errs = append(errs, fmt.Errorf("write network config %s: %w", p, err))
			continue
		}
		if changed {
			env.Log.Info("wrote network config", "path", p)
		}
	}
	return errors.Join(errs...)
}
