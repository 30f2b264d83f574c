package netup

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/netup/parse"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// KernelNetwork is the network config the kernel command line gives, in
// the forms bare-metal and PXE boots use: dracut's ip=, nameserver= and
// ifname=, and cloud-init's network-config=. PID 1 brings it up before
// the network datasources are probed; it is the instance's network
// config over the system config's and the datasource's, in cloud-init's
// order (network-config= on the command line, then the initramfs's ip=
// configuration, then the system config, then the datasource), without
// merging.
type KernelNetwork struct {
	// Config is network-config= decoded (base64, gzip'd or not): a v1 or
	// v2 document, which wins over ip=. Disabled is
	// network-config=disabled.
	Config   []byte
	Disabled bool
	// IP are the ip= parameters, in order.
	IP []IPParam
	// Nameservers are the nameserver= addresses.
	Nameservers []netip.Addr
	// Names are ifname=NAME:MAC: the NIC with the MAC is named NAME.
	Names []IfName
	// Problems are the values that did not parse, each passed over (a
	// typo on the command line must not stop a boot).
	Problems []string
}

// IPParam is one ip= parameter.
type IPParam struct {
	// Interface is the NIC's name; "" is every NIC for a DHCP form, the
	// first NIC for a static one.
	Interface string
	// Method is what the address comes from: "static", "dhcp", "dhcp6",
	// "auto6" (SLAAC), or "off" (ip=off, IFACE:off: nothing).
	Method string
	// Address, Gateway and DNS of a static form.
	Address netip.Prefix
	Gateway netip.Addr
	DNS     []netip.Addr
	// Hostname is the form's hostname field; seedinit leaves the
	// hostname to the datasource, as cloud-init does.
	Hostname string
	MTU      int
	// MAC asks for the NIC's address to be set; seedinit reports it and
	// sets nothing (cloud-init's config cannot say it either).
	MAC string
}

// IfName is one ifname= parameter.
type IfName struct{ Name, MAC string }

// Where a kernel network config comes from, for logs and reports.
const (
	SourceKernelNetworkConfig = "network-config= on the kernel command line"
	SourceKernelIP            = "ip= on the kernel command line"
)

// maxKernelNetworkConfig bounds network-config= once decompressed: a
// network config is kilobytes; a gzip bomb on the command line must not
// fill PID 1's memory.
const maxKernelNetworkConfig = 1 << 20

// ParseKernelNetwork reads the network parameters of a kernel command
// line; nil when it has none.
func ParseKernelNetwork(cmdline string) *KernelNetwork {
	k := &KernelNetwork{}
	found := false
	var netcfg string
	for _, w := range kernelWords(cmdline) {
		name, value, _ := strings.Cut(w, "=")
		switch name {
		case "ip":
			found = true
			p, err := ParseIPParam(value)
			if err != nil {
				k.Problems = append(k.Problems, fmt.Sprintf("ip=%s: %v", clipArg(value), err))
				continue
			}
			k.IP = append(k.IP, p)
		case "nameserver":
			found = true
			a, err := netip.ParseAddr(strings.Trim(value, "[]"))
			if err != nil {
				k.Problems = append(k.Problems, fmt.Sprintf("nameserver=%s: want an IP address", clipArg(value)))
				continue
			}
			k.Nameservers = append(k.Nameservers, a)
		case "ifname":
			found = true
			n, mac, ok := strings.Cut(value, ":")
			hw, err := net.ParseMAC(mac)
			if !ok || n == "" || err != nil || len(hw) != 6 || !validIfName(n) {
				k.Problems = append(k.Problems, fmt.Sprintf("ifname=%s: want NAME:MAC", clipArg(value)))
				continue
			}
			k.Names = append(k.Names, IfName{Name: n, MAC: hw.String()})
		case "network-config":
			// cloud-init takes the last one.
			found, netcfg = true, value
		}
	}
	if !found {
		return nil
	}
	if netcfg != "" {
		if netcfg == "disabled" {
			k.Disabled = true
		} else if doc, err := decodeKernelNetworkConfig(netcfg); err != nil {
			k.Problems = append(k.Problems, "network-config=: "+err.Error())
		} else {
			k.Config = doc
		}
	}
	return k
}

// decodeKernelNetworkConfig is cloud-init's _b64dgz and load_yaml: base64
// (Python's, lenient), then gunzip'd when it is gzip; a document that
// holds nothing is none.
func decodeKernelNetworkConfig(v string) ([]byte, error) {
	b, err := seed.DecodeBase64([]byte(v))
	if err != nil {
		return nil, fmt.Errorf("want base64: %w", err)
	}
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("gunzip: %w", err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, maxKernelNetworkConfig+1))
		if err != nil {
			return nil, fmt.Errorf("gunzip: %w", err)
		}
		if len(out) > maxKernelNetworkConfig {
			return nil, fmt.Errorf("more than %d bytes once decompressed", maxKernelNetworkConfig)
		}
		b = out
	}
	doc, err := yaml11.Load(b)
	if err != nil {
		return nil, fmt.Errorf("parse YAML: %w", err)
	}
	switch doc.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return b, nil
	}
	return nil, fmt.Errorf("want a mapping, got %T", doc)
}

// ParseIPParam reads one ip= value in dracut's forms (the kernel's own
// ipconfig form is the static one):
//
//	ip={dhcp|on|any|dhcp6|auto6|either6|off|none}
//	ip=IFACE:{dhcp|on|any|dhcp6|auto6|off|none}[:[MTU][:MAC]]
//	ip=CLIENT:[PEER]:GW:NETMASK:HOSTNAME:IFACE:{none|off|dhcp|...}[:[MTU][:MAC]]
//	ip=CLIENT:[PEER]:GW:NETMASK:HOSTNAME:IFACE:{none|off|dhcp|...}[:[DNS1][:DNS2]]
//
// IPv6 addresses in brackets; NETMASK dotted or a prefix length; CLIENT
// may carry /PREFIX instead.
func ParseIPParam(v string) (IPParam, error) {
	f, err := splitIPFields(v)
	if err != nil {
		return IPParam{}, err
	}
	if len(f) == 1 {
		m, err := ipMethod(f[0])
		if err != nil {
			return IPParam{}, err
		}
		if m == "static" {
			m = "off" // ip=off, ip=none: no network
		}
		return IPParam{Method: m}, nil
	}
	var p IPParam
	if _, isAddr := parseIPField(f[0]); !isAddr && !strings.Contains(f[0], "/") {
		// IFACE:METHOD[:MTU[:MAC]]
		if !validIfName(f[0]) {
			return p, fmt.Errorf("interface %q: not a NIC's name", clipArg(f[0]))
		}
		p.Interface = f[0]
		if p.Method, err = ipMethod(f[1]); err != nil {
			return p, err
		}
		if p.Method == "static" {
			p.Method = "off" // IFACE:off: that NIC left alone
		}
		return p, p.mtuAndMAC(f[2:])
	}
	if len(f) < 7 {
		return p, errors.New("want CLIENT:[PEER]:GW:NETMASK:HOSTNAME:IFACE:METHOD")
	}
	if p.Method, err = ipMethod(f[6]); err != nil {
		return p, err
	}
	p.Interface, p.Hostname = f[5], f[4]
	if p.Interface != "" && !validIfName(p.Interface) {
		return p, fmt.Errorf("interface %q: not a NIC's name", clipArg(p.Interface))
	}
	if f[2] != "" {
		gw, ok := parseIPField(f[2])
		if !ok {
			return p, fmt.Errorf("gateway %q: want an IP address", clipArg(f[2]))
		}
		p.Gateway = gw
	}
	if p.Method == "static" {
		if p.Address, err = clientPrefix(f[0], f[3]); err != nil {
			return p, err
		}
	}
	rest := f[7:]
	if len(rest) > 0 && looksLikeIP(rest[0]) {
		for _, d := range rest {
			if d == "" {
				continue
			}
			a, ok := parseIPField(d)
			if !ok {
				return p, fmt.Errorf("DNS server %q: want an IP address", clipArg(d))
			}
			p.DNS = append(p.DNS, a)
		}
		if len(p.DNS) > 2 {
			return p, errors.New("more than two DNS servers")
		}
		return p, nil
	}
	return p, p.mtuAndMAC(rest)
}

// mtuAndMAC reads the optional MTU and MAC fields (the MAC's six
// colon-separated bytes split into fields).
func (p *IPParam) mtuAndMAC(f []string) error {
	if len(f) == 0 {
		return nil
	}
	if f[0] != "" {
		mtu, err := strconv.Atoi(f[0])
		if err != nil || mtu < 68 || mtu > 65535 {
			return fmt.Errorf("MTU %q: want 68 to 65535", clipArg(f[0]))
		}
		p.MTU = mtu
	}
	if len(f) > 1 {
		hw, err := net.ParseMAC(strings.Join(f[1:], ":"))
		if err != nil || len(hw) != 6 {
			return fmt.Errorf("MAC %q: want an Ethernet address", clipArg(strings.Join(f[1:], ":")))
		}
		p.MAC = hw.String()
	}
	return nil
}

// ipMethod names an autoconf value as seedinit applies it.
func ipMethod(s string) (string, error) {
	switch s {
	case "none", "off", "":
		return "static", nil
	case "dhcp", "on", "any", "both", "bootp", "rarp", "single-dhcp":
		return "dhcp", nil
	case "dhcp6":
		return "dhcp6", nil
	case "auto6", "either6":
		return "auto6", nil
	}
	return "", fmt.Errorf("autoconf %q: want none, off, dhcp, on, any, dhcp6 or auto6 (ibft is not supported)", clipArg(s))
}

// clientPrefix is the client address with its prefix: /LEN on it, else
// the netmask field (dotted or a length), else the address's class, as
// the kernel's ipconfig guesses it (/64 for IPv6).
func clientPrefix(client, mask string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(strings.Trim(client, "[]")); err == nil && strings.Contains(client, "/") {
		return p, nil
	}
	a, ok := parseIPField(client)
	if !ok {
		return netip.Prefix{}, fmt.Errorf("client %q: want an IP address", clipArg(client))
	}
	bits := -1
	switch {
	case mask == "" && a.Is6():
		bits = 64
	case mask == "":
		switch first := a.As4()[0]; {
		case first < 128:
			bits = 8
		case first < 192:
			bits = 16
		default:
			bits = 24
		}
	default:
		if n, err := strconv.Atoi(mask); err == nil && n >= 0 && n <= a.BitLen() {
			bits = n
		} else if m, ok := parseIPField(mask); ok && m.Is4() && a.Is4() {
			ones, size := net.IPMask(m.AsSlice()).Size()
			if size == 32 {
				bits = ones
			}
		}
	}
	if bits < 0 {
		return netip.Prefix{}, fmt.Errorf("netmask %q: want a dotted mask or a prefix length", clipArg(mask))
	}
	return netip.PrefixFrom(a, bits), nil
}

// splitIPFields splits at colons outside brackets, the brackets removed.
func splitIPFields(v string) ([]string, error) {
	var out []string
	var b strings.Builder
	depth := 0
	for _, r := range v {
		switch {
		case r == '[':
			depth++
			b.WriteRune(r)
		case r == ']':
			if depth == 0 {
				return nil, errors.New("unbalanced ]")
			}
			depth--
			b.WriteRune(r)
		case r == ':' && depth == 0:
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteRune(r)
		}
	}
	if depth != 0 {
		return nil, errors.New("unbalanced [")
	}
	return append(out, b.String()), nil
}

func parseIPField(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	return a, err == nil
}

// looksLikeIP tells dracut's DNS fields from its MTU field.
func looksLikeIP(s string) bool {
	return strings.ContainsAny(s, ".[")
}

// validIfName is the network config's rule for a NIC's name, which the
// document must pass.
func validIfName(n string) bool { return parse.IsInterfaceName(n) }

// kernelWords splits a command line as the kernel does: at spaces
// outside double quotes, the quotes removed; arguments after -- are
// init's.
func kernelWords(s string) []string {
	var words []string
	var b strings.Builder
	inQuote, inWord := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote, inWord = !inQuote, true
		case (r == ' ' || r == '\t' || r == '\n') && !inQuote:
			if inWord {
				if b.String() == "--" {
					return words
				}
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteRune(r)
			inWord = true
		}
	}
	if inWord && b.String() != "--" {
		words = append(words, b.String())
	}
	return words
}

func clipArg(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Static reports whether the ip= parameters give some NIC a static
// address: such a network is up only once PID 1 brings it up, where a
// DHCP one is what the search's own DHCP does anyway.
func (k *KernelNetwork) Static() bool {
	if k == nil || k.Config != nil || k.Disabled {
		return false
	}
	for _, p := range k.IP {
		if p.Method == "static" && p.Address.IsValid() {
			return true
		}
	}
	return false
}

// Document is the instance's network config the command line gives, for
// the NICs nics (in the order the machine lists them): network-config=
// as given, else ip=, nameserver= and ifname= as a cloud-init v1
// document, the way cloud-init converts the initramfs's ip=
// configuration (a physical entry per NIC, its subnet static or DHCP,
// the DNS servers on it, nameserver= global). nil when the command line
// has none (or only ip=off), or network-config=disabled (Disabled says
// so).
func (k *KernelNetwork) Document(nics []MAC) (doc []byte, kind, source string) {
	if k == nil || k.Disabled {
		return nil, "", ""
	}
	if k.Config != nil {
		return k.Config, KindYAML, SourceKernelNetworkConfig
	}
	type entry struct {
		m       map[string]any
		subnets []any
	}
	var order []string
	entries := map[string]*entry{}
	get := func(name string) *entry {
		if e, ok := entries[name]; ok {
			return e
		}
		e := &entry{m: map[string]any{"type": "physical", "name": name}}
		entries[name] = e
		order = append(order, name)
		return e
	}
	for _, n := range k.Names {
		get(n.Name).m["mac_address"] = n.MAC
	}
	for _, p := range k.IP {
		if p.Method == "off" || p.Method == "static" && !p.Address.IsValid() {
			continue
		}
		var names []string
		switch {
		case p.Interface != "":
			names = []string{p.Interface}
		case p.Method == "static" && len(nics) > 0:
			names = []string{nics[0].Name}
		case p.Method != "static":
			for _, n := range nics {
				names = append(names, n.Name)
			}
		}
		for _, name := range names {
			e := get(name)
			if p.MTU > 0 {
				e.m["mtu"] = p.MTU
			}
			switch p.Method {
			case "static":
				s := map[string]any{"type": "static", "address": p.Address.String()}
				if p.Gateway.IsValid() {
					s["gateway"] = p.Gateway.String()
				}
				if len(p.DNS) > 0 {
					s["dns_nameservers"] = addrStrings(p.DNS)
				}
				e.subnets = append(e.subnets, s)
			case "dhcp":
				e.subnets = append(e.subnets, map[string]any{"type": "dhcp4"})
			case "dhcp6":
				e.subnets = append(e.subnets, map[string]any{"type": "dhcp6"})
			case "auto6":
				e.subnets = append(e.subnets, map[string]any{"type": "ipv6_slaac"})
			}
		}
	}
	var config []any
	for _, name := range order {
		e := entries[name]
		if len(e.subnets) > 0 {
			e.m["subnets"] = e.subnets
		}
		config = append(config, e.m)
	}
	if len(k.Nameservers) > 0 {
		config = append(config, map[string]any{"type": "nameserver", "address": addrStrings(k.Nameservers)})
	}
	if len(config) == 0 {
		return nil, "", ""
	}
	b, _ := json.Marshal(map[string]any{"version": 1, "config": config})
	return b, KindYAML, SourceKernelIP
}

func addrStrings(as []netip.Addr) []any {
	out := make([]any, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}
