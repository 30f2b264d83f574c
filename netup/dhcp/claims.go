package dhcp

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The keeper stands aside on a NIC, for one address family, as soon as
// another DHCP client runs for it: two clients renewing one address fight
// over it. It tells by the processes: a DHCP client is known by its name
// (comm; a busybox applet's comm is "busybox", its name is argv[0]'s or,
// for "busybox udhcpc ...", argv[1]'s), the NICs it serves by its command
// line, as each takes them, and the family by the client or its flags:
// udhcpc -i eth0 takes eth0's DHCPv4 only, and eth0's DHCPv6 lease is
// still the keeper's to renew.

// claim is a NIC and a family (4 or 6) another client has taken.
type claim struct {
	nic    string
	family int
}

// nicClients are clients whose command line names the NICs they serve;
// with none named they serve every NIC, but udhcpc and udhcpc6, whose
// default is eth0.
var nicClients = map[string]bool{
	"dhclient": true, "dhclient3": true, "dhcpcd": true, "udhcpc": true, "udhcpc6": true, "pump": true, "odhcp6c": true,
}

// IPv4Clients are the DHCP clients by executable name that take IPv4
// for the NICs they are given: what a root's network service (ifupdown,
// network-scripts) needs one of to bring up a DHCP interface. Sorted.
func IPv4Clients() []string {
	var out []string
	for name := range nicClients {
		if slices.Contains(familiesOf(name, nil), 4) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// wholeMachineClients manage every NIC they find from their own config,
// for the families given.
var wholeMachineClients = map[string][]int{
	"systemd-network": {4, 6}, // systemd-networkd, comm cut to 15 bytes
	"NetworkManager":  {4, 6},
	"connmand":        {4, 6},
	"wickedd-dhcp4":   {4},
	"wickedd-dhcp6":   {6},
}

// claimedNICs returns which NICs and families of nics another DHCP
// client now serves, and that client's name, from procDir; sysClassNet
// names every NIC, to tell a NIC argument from an option's value.
func claimedNICs(procDir, sysClassNet string, nics []string) map[claim]string {
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return nil
	}
	self := os.Getpid()
	out := map[claim]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(procDir, e.Name(), "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		if families, ok := wholeMachineClients[name]; ok {
			for _, n := range nics {
				for _, f := range families {
					out[claim{n, f}] = name
				}
			}
			continue
		}
		if !nicClients[name] && name != "busybox" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(procDir, e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if name == "busybox" {
			if name, args = busyboxApplet(args); !nicClients[name] {
				continue
			}
		} else {
			args = args[min(1, len(args)):]
		}
		for _, n := range servedBy(name, args, nics, sysClassNet) {
			for _, f := range familiesOf(name, args) {
				out[claim{n, f}] = name
			}
		}
	}
	return out
}

// busyboxApplet is the applet a busybox process runs and its arguments:
// argv[0]'s name (a link to busybox), or argv[1]'s after busybox itself.
func busyboxApplet(argv []string) (string, []string) {
	if len(argv) == 0 {
		return "", nil
	}
	name := filepath.Base(argv[0])
	if name == "busybox" && len(argv) > 1 {
		return filepath.Base(argv[1]), argv[2:]
	}
	return name, argv[1:]
}

// familiesOf are the address families a client started with args takes.
func familiesOf(client string, args []string) []int {
	switch client {
	case "udhcpc6", "odhcp6c":
		return []int{6}
	case "udhcpc", "pump":
		return []int{4}
	case "dhclient", "dhclient3":
		if slices.Contains(args, "-6") {
			return []int{6}
		}
		return []int{4}
	case "dhcpcd":
		switch {
		case slices.Contains(args, "-4") || slices.Contains(args, "--ipv4only"):
			return []int{4}
		case slices.Contains(args, "-6") || slices.Contains(args, "--ipv6only"):
			return []int{6}
		}
	}
	return []int{4, 6}
}

// servedBy says which of nics a client started with args serves.
func servedBy(client string, args, nics []string, sysClassNet string) []string {
	if client == "udhcpc" || client == "udhcpc6" {
		iface := "eth0"
		for i, a := range args {
			switch {
			case (a == "-i" || a == "--interface") && i+1 < len(args):
				iface = args[i+1]
			case strings.HasPrefix(a, "--interface="):
				iface = strings.TrimPrefix(a, "--interface=")
			case strings.HasPrefix(a, "-i") && len(a) > 2:
				iface = a[2:]
			}
		}
		if slices.Contains(nics, iface) {
			return []string{iface}
		}
		return nil
	}
	var named []string
	namesAny := false
	for _, a := range args {
		if slices.Contains(nics, a) {
			named = append(named, a)
		}
		if a == "" || a == "." || a == ".." || strings.Contains(a, "/") {
			continue
		}
		if _, err := os.Stat(filepath.Join(sysClassNet, a)); err == nil {
			namesAny = true
		}
	}
	if len(named) > 0 || namesAny {
		return named
	}
	return nics
}
