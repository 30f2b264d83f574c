package parse

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
)

// eniOptions are the ENI options whose first argument cloud-init keeps
// (NET_CONFIG_OPTIONS in cloudinit/net/eni.py).
var eniOptions = map[string]bool{
	"address": true, "netmask": true, "broadcast": true, "network": true,
	"metric": true, "gateway": true, "pointtopoint": true, "media": true,
	"mtu": true, "hostname": true, "leasehours": true, "leasetime": true,
	"vendor": true, "client": true, "bootfile": true, "server": true,
	"hwaddr": true, "provider": true, "frame": true, "netnum": true,
	"endpoint": true, "local": true, "ttl": true,
}

type eniIface struct {
	auto       bool
	defined    bool
	method     string
	options    map[string]string
	hwaddress  string
	hasHW      bool
	dnsServers []string
	dnsSearch  []string
	hasDNS     bool
}

// ENI parses a Debian /etc/network/interfaces text the way cloud-init's
// convert_eni_data does: each "iface" stanza becomes a subnet of its
// device (eth0:1 belongs to eth0), keeping the method, address, netmask,
// gateway, broadcast, hwaddress and dns-* options. "source" and
// "source-directory" are reported, not followed: seedinit reads no files
// on behalf of the text.
func ENI(data []byte, opts Options) (*model.Network, error) { return eni(data, opts) }

func eni(data []byte, opts Options) (*model.Network, error) {
	ifaces := map[string]*eniIface{}
	var order []string
	get := func(name string) *eniIface {
		if i, ok := ifaces[name]; ok {
			return i
		}
		i := &eniIface{options: map[string]string{}}
		ifaces[name] = i
		order = append(order, name)
		return i
	}
	var errs []error
	current := ""
	for lineNo, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := fmt.Sprintf("line %d", lineNo+1)
		f := strings.Fields(line)
		option, args := f[0], f[1:]
		switch {
		case option == "source" || option == "source-directory":
			errs = append(errs, fmt.Errorf("%s: %s is not followed (seedinit reads only the given text)", where, option))
		case option == "auto":
			for _, name := range args {
				get(name).auto = true
			}
		case option == "iface":
			if len(args) < 3 {
				errs = append(errs, fmt.Errorf("%s: iface needs a name, a family and a method", where))
				current = ""
				continue
			}
			i := get(args[0])
			if i.defined {
				errs = append(errs, fmt.Errorf("%s: interface %s can only be defined once", where, label(args[0])))
				current = ""
				continue
			}
			i.defined, i.method = true, args[2]
			current = args[0]
		case current == "":
			errs = append(errs, fmt.Errorf("%s: option %s outside an iface stanza", where, quoteValue(option)))
		case len(args) == 0:
			// Every option cloud-init keeps takes an argument.
			if option == "hwaddress" || eniOptions[option] {
				errs = append(errs, fmt.Errorf("%s: option %q without a value", where, option))
			}
		case option == "hwaddress":
			i := ifaces[current]
			if args[0] == "ether" {
				if len(args) < 2 {
					errs = append(errs, fmt.Errorf("%s: hwaddress ether without an address", where))
					continue
				}
				i.hwaddress = args[1]
			} else {
				i.hwaddress = args[0]
			}
			i.hasHW = true
		case eniOptions[option]:
			ifaces[current].options[option] = args[0]
		case option == "dns-search":
			i := ifaces[current]
			i.dnsSearch, i.hasDNS = append([]string{}, args...), true
		case option == "dns-nameservers":
			i := ifaces[current]
			i.dnsServers, i.hasDNS = append([]string{}, args...), true
		}
	}

	// cloud-init groups stanzas by device and emits devices sorted by name.
	type dev struct {
		cmd     map[string]any
		subnets []any
	}
	devs := map[string]*dev{}
	var devNames []string
	for _, name := range order {
		data := ifaces[name]
		if !data.defined {
			errs = append(errs, fmt.Errorf("interface %s: \"auto\" without an iface stanza", label(name)))
			continue
		}
		devName, _, _ := strings.Cut(name, ":")
		d, ok := devs[devName]
		if !ok {
			typ := "physical"
			if devName == "lo" {
				typ = "loopback"
			}
			d = &dev{cmd: map[string]any{"type": typ, "name": devName}}
			if data.hasHW {
				d.cmd["mac_address"] = data.hwaddress
			}
			devs[devName] = d
			devNames = append(devNames, devName)
		}
		subnet := map[string]any{"type": data.method, "control": "manual"}
		if data.auto {
			subnet["control"] = "auto"
		}
		if data.method == "static" {
			addr, ok := data.options["address"]
			if !ok {
				errs = append(errs, fmt.Errorf("interface %s: static without an address", label(name)))
				continue
			}
			subnet["address"] = addr
		}
		for _, k := range []string{"netmask", "gateway", "broadcast"} {
			if v, ok := data.options[k]; ok {
				subnet[k] = v
			}
		}
		if len(data.dnsServers) > 0 {
			subnet["dns_nameservers"] = toAny(data.dnsServers)
		}
		if len(data.dnsSearch) > 0 {
			subnet["dns_search"] = toAny(data.dnsSearch)
		}
		d.subnets = append(d.subnets, subnet)
	}
	sort.Strings(devNames)
	config := make([]any, 0, len(devNames))
	for _, name := range devNames {
		d := devs[name]
		d.cmd["subnets"] = d.subnets
		config = append(config, d.cmd)
	}
	net, err := v1(map[string]any{"version": int64(1), "config": config}, opts)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return refuse(net, fmt.Errorf("parse ENI: %w", errors.Join(errs...)))
	}
	return net, nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
