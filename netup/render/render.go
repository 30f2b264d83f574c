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
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
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

// ErrOutputPath is returned for a rendered file whose path would not stay
// under the directory it is written to.
var ErrOutputPath = errors.New("not a path inside the output directory")

// CheckPath accepts the path of a rendered file when it is relative,
// clean and has no ".." (filepath.IsLocal): one that names a place inside
// whatever directory the files are written under, before any symlink is
// followed. Interface names are part of these paths; the parsers refuse
// the names that would make them anything else.
func CheckPath(p string) error {
	odd := func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }
	if p == "" || path.Clean(p) != p || !filepath.IsLocal(filepath.FromSlash(p)) || strings.ContainsFunc(p, odd) {
		return fmt.Errorf("rendered file %s: %w", strconv.Quote(p), ErrOutputPath)
	}
	return nil
}

// DebianHeader heads the ENI and netplan files, as on Debian and Ubuntu.
const DebianHeader = `# This file is generated from information provided by the datasource.  Changes
# to it will not persist across an instance reboot.  To disable cloud-init's
# network configuration capabilities, write a file
# /etc/cloud/cloud.cfg.d/99-disable-network-config.cfg with the following:
# network: {config: disabled}
`

// udevRules is cloud-init's 70-persistent-net.rules: one rule per NIC
// with a MAC, naming it. A value that could end its quoted string (and
// so let a RUN+= follow) is refused.
func udevRules(n *model.Network) ([]byte, error) {
	var b strings.Builder
	for i, iface := range n.Interfaces {
		if iface.Type != model.TypePhysical || iface.MACAddress == "" {
			continue
		}
		driver := iface.Driver
		if driver == "" {
			driver = "?*"
		}
		for _, v := range [...]struct{ key, value string }{{"driver", driver}, {"mac_address", iface.MACAddress}, {"name", iface.Name}} {
			if why := whyUnsafe("udev rules", v.value, true, udevUnsafe); why != "" {
				return nil, unsafeError("udev rules", fmt.Sprintf("network.interfaces[%d].%s", i, v.key), v.value, why)
			}
		}
		fmt.Fprintf(&b, "SUBSYSTEM==\"net\", ACTION==\"add\", DRIVERS==\"%s\", ATTR{address}==\"%s\", NAME=\"%s\"\n",
			driver, iface.MACAddress, iface.Name)
	}
	return []byte(b.String()), nil
}
