package ds

import (
	"strings"
)

// cmdlineDSKeys are the kernel parameters that name datasources:
// cloud-init's ds= and ds-identify's ci.ds= / ci.datasource=, and
// seedinit's own seedinit.ds=.
var cmdlineDSKeys = []string{"seedinit.ds", "ci.ds", "ci.datasource", "ds"}

// CmdlineDatasources returns the datasources the kernel command line asks
// for, in order, and the parameter that named them. A value may be a
// comma-separated list ("ci.ds=OpenStack,None"); ds=nocloud;s=... names
// NoCloud (its arguments are read by NoCloud itself). seedinit.ds wins
// over ci.ds / ci.datasource, which win over ds=; the last occurrence of a
// key counts, as in the kernel's own parsing.
func CmdlineDatasources(cmdline string) (names []string, param string) {
	found := map[string]string{}
	for _, tok := range strings.Fields(cmdline) {
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			continue
		}
		for _, key := range cmdlineDSKeys {
			if k == key {
				found[key] = v
			}
		}
	}
	for _, key := range cmdlineDSKeys {
		v, ok := found[key]
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(v, ";")
		for _, n := range strings.Split(name, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			return names, key + "=" + v
		}
	}
	return nil, ""
}

// noCloudArgs is what ds=nocloud[-net];k=v;... carries.
type noCloudArgs struct {
	// Net is true for ds=nocloud-net.
	Net bool
	// Meta holds the pairs, with h, i and s spelled out as
	// local-hostname, instance-id and seedfrom.
	Meta map[string]any
}

// parseNoCloudArgs reads NoCloud's data from a kernel command line or an
// SMBIOS serial number, as cloud-init's parse_cmdline_data does: the token
// must be "ds=nocloud" or "ds=nocloud-net", alone or followed by ";".
func parseNoCloudArgs(line string) (noCloudArgs, bool) {
	padded := " " + line + " "
	for _, id := range []string{"ds=nocloud", "ds=nocloud-net"} {
		if !strings.Contains(padded, " "+id+" ") && !strings.Contains(padded, " "+id+";") {
			continue
		}
		var arg string
		for _, tok := range strings.Fields(line) {
			if strings.HasPrefix(tok, id) {
				arg = tok
			}
		}
		_, rest, _ := strings.Cut(arg, "=")
		pairs := strings.Split(rest, ";")[1:]
		md := map[string]any{}
		long := map[string]string{"h": "local-hostname", "i": "instance-id", "s": "seedfrom"}
		for _, item := range pairs {
			if item == "" {
				continue
			}
			k, v, hasValue := strings.Cut(item, "=")
			if l, ok := long[k]; ok {
				k = l
			}
			if hasValue {
				md[k] = v
			} else {
				md[k] = nil
			}
		}
		return noCloudArgs{Net: id == "ds=nocloud-net", Meta: md}, true
	}
	return noCloudArgs{}, false
}
