package dhcp

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The keeper stands aside on a NIC as soon as another DHCP client runs
// for it: two clients renewing one address fight over it. It tells by the
// processes: a DHCP client is known by its name (comm), and the NICs it
// serves by its command line, as each takes them.

// nicClients are clients whose command line names the NICs they serve;
// with none named they serve every NIC, but udhcpc, whose default is eth0.
var nicClients = map[string]bool{"dhclient": true, "dhclient3": true, "dhcpcd": true, "udhcpc": true, "pump": true}

// wholeMachineClients manage every NIC they find from their own config.
var wholeMachineClients = map[string]bool{
	"systemd-network": true, // systemd-networkd, comm cut to 15 bytes
	"NetworkManager":  true,
	"connmand":        true,
	"wickedd-dhcp4":   true,
	"wickedd-dhcp6":   true,
}

// claimedNICs returns which of nics another DHCP client now serves, and
// that client's name, from procDir; sysClassNet names every NIC, to tell
// a NIC argument from an option's value.
func claimedNICs(procDir, sysClassNet string, nics []string) map[string]string {
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return nil
	}
	self := os.Getpid()
	out := map[string]string{}
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
		switch {
		case wholeMachineClients[name]:
			for _, n := range nics {
				out[n] = name
			}
		case nicClients[name]:
			raw, err := os.ReadFile(filepath.Join(procDir, e.Name(), "cmdline"))
			if err != nil {
				continue
			}
			args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
			for _, n := range servedBy(name, args[min(1, len(args)):], nics, sysClassNet) {
				out[n] = name
			}
		}
	}
	return out
}

// servedBy says which of nics a client started with args serves.
func servedBy(client string, args, nics []string, sysClassNet string) []string {
	if client == "udhcpc" {
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
