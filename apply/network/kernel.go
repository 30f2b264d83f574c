package network

import (
	"os"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/netup"
	"github.com/seedinit/seedinit/netup/link"
)

// procCmdline is the running kernel's command line; tests point it at a
// file of their own.
var procCmdline = "/proc/cmdline"

// kernelSource is the network config the kernel command line gives.
type kernelSource struct {
	raw      []byte
	kind     string
	source   string
	disabled bool
}

// kernelConfig is the running kernel's network config (network-config=,
// ip=, nameserver=, ifname=) when the target is the running system, nil
// when it gives none. In cloud-init's order it comes before the system
// config and the datasource's: network-config= on the command line,
// then the initramfs's ip= configuration, each replacing, not merged
// with, what comes after.
func kernelConfig(env *apply.Env) *kernelSource {
	if env.Sys == nil || !env.Sys.Live() {
		return nil
	}
	b, err := os.ReadFile(procCmdline)
	if err != nil {
		return nil
	}
	k := netup.ParseKernelNetwork(strings.TrimSpace(string(b)))
	if k == nil {
		return nil
	}
	for _, p := range k.Problems {
		env.Warn("kernel command line network: %s (passed over)", p)
	}
	if k.Disabled {
		return &kernelSource{disabled: true, source: netup.SourceKernelNetworkConfig}
	}
	var nics []netup.MAC
	if found, err := link.Discover(sysClassNet); err == nil {
		for _, n := range found {
			if n.MAC != "" {
				nics = append(nics, netup.MAC{Name: n.Name, Address: n.MAC, Driver: n.Driver})
			}
		}
	}
	raw, kind, source := k.Document(nics)
	if raw == nil {
		return nil
	}
	return &kernelSource{raw: raw, kind: kind, source: source}
}
