// Package link finds the machine's NICs and renames them by MAC address
// with netlink, the way cloud-init does before any DHCP touches them.
package link

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// SysClassNet is where the kernel lists network devices.
const SysClassNet = "/sys/class/net"

// NIC is one network device as /sys/class/net describes it.
type NIC struct {
	Name string
	// MAC is lower case, "aa:bb:cc:dd:ee:ff"; empty when the device has none.
	MAC string
	// Driver is the kernel driver bound to the device ("virtio_net"), empty
	// for virtual devices that have no device node.
	Driver string
	// Carrier reports a cable (or virtual peer) present; false when the
	// link is down and the kernel cannot tell.
	Carrier bool
	// Up reports the administrative state (IFF_UP).
	Up bool
	// Physical is set for devices backed by hardware (a "device" entry).
	Physical bool
	// Virtual kinds cloud-init never treats as a NIC to configure.
	Bond, Bridge, VLAN bool
	// Type is the ARPHRD type (1 for Ethernet, 772 for loopback).
	Type int
}

// Discover lists the NICs under dir (SysClassNet on a live system), sorted
// by name, skipping the loopback. Devices that cannot be read are reported
// in the error while the others are returned.
func Discover(dir string) ([]NIC, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list network devices in %s: %w", dir, err)
	}
	var nics []NIC
	var errs []error
	for _, e := range entries {
		nic, err := readNIC(filepath.Join(dir, e.Name()))
		if errors.Is(err, errNotDevice) {
			continue // bonding_masters and other control files
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read network device %s: %w", e.Name(), err))
			continue
		}
		if nic.Type == 772 || nic.Name == "lo" {
			continue
		}
		nics = append(nics, nic)
	}
	sort.Slice(nics, func(i, j int) bool { return nics[i].Name < nics[j].Name })
	return nics, errors.Join(errs...)
}

var errNotDevice = errors.New("not a network device")

func readNIC(dir string) (NIC, error) {
	nic := NIC{Name: filepath.Base(dir)}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	if fi, err := os.Stat(dir); err != nil {
		return nic, err
	} else if !fi.IsDir() {
		return nic, errNotDevice
	}
	nic.MAC = normalizeMAC(read("address"))
	if t, err := strconv.Atoi(read("type")); err == nil {
		nic.Type = t
	}
	// carrier reads EINVAL while the link is down: that is "no carrier".
	nic.Carrier = read("carrier") == "1"
	if flags, err := strconv.ParseUint(strings.TrimPrefix(read("flags"), "0x"), 16, 32); err == nil {
		nic.Up = flags&1 != 0
	}
	if _, err := os.Stat(filepath.Join(dir, "device")); err == nil {
		nic.Physical = true
	}
	if target, err := os.Readlink(filepath.Join(dir, "device", "driver")); err == nil {
		nic.Driver = filepath.Base(target)
	}
	nic.Bond = exists(filepath.Join(dir, "bonding"))
	nic.Bridge = exists(filepath.Join(dir, "bridge"))
	nic.VLAN = strings.Contains(read("uevent"), "DEVTYPE=vlan")
	return nic, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist) && err == nil
}

// normalizeMAC lower-cases a MAC and drops the all-zero address that
// tunnels and the loopback show.
func normalizeMAC(mac string) string {
	mac = strings.ToLower(strings.TrimSpace(mac))
	if strings.Trim(mac, "0:") == "" {
		return ""
	}
	return mac
}
