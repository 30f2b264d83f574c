// Package render writes a model.Network in the formats the target OS
// reads: Debian ENI, systemd-networkd, netplan, RHEL sysconfig, and a JSON
// dump of the model. Each renderer returns file contents keyed by the path
// cloud-init writes them to, relative to the target root
// ("etc/netplan/50-cloud-init.yaml"); nothing is written here.
//
// The output matches cloud-init 22.4.2's renderers key for key (the
// differential tests check it against `cloud-init devel net-convert`);
// where seedinit departs from cloud-init the function says so and why.
package render

import (
	"fmt"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
)

// Files maps a path relative to the target root to its contents.
type Files map[string][]byte

// Paths cloud-init writes, relative to the target root.
const (
	ENIPath          = "etc/network/interfaces.d/50-cloud-init"
	UdevRulesPath    = "etc/udev/rules.d/70-persistent-net.rules"
	NetplanPath      = "etc/netplan/50-cloud-init.yaml"
	NetworkdDir      = "etc/systemd/network"
	SysconfigDir     = "etc/sysconfig"
	ResolvConfPath   = "etc/resolv.conf"
	NMConfPath       = "etc/NetworkManager/conf.d/99-cloud-init.conf"
	SysconfigNetwork = "etc/sysconfig/network"
)

// DebianHeader heads the ENI and netplan files, as on Debian and Ubuntu.
const DebianHeader = `# This file is generated from information provided by the datasource.  Changes
# to it will not persist across an instance reboot.  To disable cloud-init's
# network configuration capabilities, write a file
# /etc/cloud/cloud.cfg.d/99-disable-network-config.cfg with the following:
# network: {config: disabled}
`

// udevRules is cloud-init's 70-persistent-net.rules: one rule per NIC
// with a MAC, naming it.
func udevRules(n *model.Network) []byte {
	var b strings.Builder
	for _, iface := range n.Interfaces {
		if iface.Type != model.TypePhysical || iface.MACAddress == "" {
			continue
		}
		driver := iface.Driver
		if driver == "" {
			driver = "?*"
		}
		fmt.Fprintf(&b, "SUBSYSTEM==\"net\", ACTION==\"add\", DRIVERS==\"%s\", ATTR{address}==\"%s\", NAME=\"%s\"\n",
			driver, iface.MACAddress, iface.Name)
	}
	return []byte(b.String())
}
