package boot

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/model"
)

// The roots the table's network services come from, as files: "a -> b"
// is a symlink, a name ending in "/" a directory, and a file in a bin or
// sbin directory an executable.
var (
	// Debian 12 as scripts/build-debian-root makes it: usrmerge,
	// sysvinit, ifupdown, no DHCP client (debootstrap installs no
	// Recommends).
	debianRoot = []string{"bin -> usr/bin", "sbin -> usr/sbin", "lib -> usr/lib", "usr/sbin/init", "usr/sbin/ifup",
		"etc/network/interfaces", "etc/init.d/networking"}
	// The same with isc-dhcp-client.
	debianDHCPRoot = append(slices.Clone(debianRoot), "usr/sbin/dhclient")
	// Debian's OpenRC runs ifupdown's own networking script.
	debianOpenRCRoot = append(slices.Clone(debianRoot), "usr/sbin/openrc", "usr/sbin/openrc-init")
	// Alpine: OpenRC and busybox's ifup and udhcpc.
	alpineRoot = []string{"bin/busybox", "sbin/ifup -> /bin/busybox", "sbin/udhcpc -> /bin/busybox", "sbin/openrc",
		"etc/network/interfaces", "etc/init.d/networking"}
	// Gentoo: OpenRC with netifrc (net.lo, /etc/conf.d/net) and dhcpcd,
	// no ifup.
	netifrcRoot = []string{"sbin/openrc", "sbin/dhcpcd", "etc/init.d/net.lo", "etc/init.d/net.eth0 -> net.lo", "etc/conf.d/net"}
	// systemd-networkd and NetworkManager, on usrmerge roots.
	networkdRoot       = []string{"lib -> usr/lib", "usr/lib/systemd/systemd-networkd"}
	networkManagerRoot = []string{"usr/sbin/NetworkManager"}
	// RHEL's network-scripts.
	sysconfigRoot = []string{"usr/sbin/ifup", "usr/sbin/dhclient", "etc/sysconfig/network-scripts/"}
	// The e2e tests' busybox appliance: no network service at all.
	busyboxRoot = []string{"bin/busybox", "bin/sh -> busybox", "bin/ip -> busybox", "sbin/init"}
)

// makeRoot makes a root of files (as above) in a temporary directory.
func makeRoot(t *testing.T, files []string) *rootfs.Root {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		name, target, link := strings.Cut(f, " -> ")
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case link:
			err = os.Symlink(target, p)
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(p, 0o755)
		default:
			mode := os.FileMode(0o644)
			if base := filepath.Base(filepath.Dir(name)); base == "bin" || base == "sbin" || strings.HasPrefix(name, "usr/lib/systemd/") {
				mode = 0o755
			}
			err = os.WriteFile(p, nil, mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

// What detectOSNetwork makes of each kind of root. It looks for network
// tools, not at the init system: an OpenRC root is what its network
// scripts are (Debian's and Alpine's: ifupdown; Gentoo's netifrc: none
// it knows, so the network stays as PID 1 set it and the lease keeper
// keeps its leases).
func TestDetectOSNetwork(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  osNetwork
		found bool
	}{
		{"Debian, sysvinit, usrmerge: ifupdown, no DHCP client", debianRoot, osNetwork{name: "ifupdown"}, true},
		{"Debian with isc-dhcp-client", debianDHCPRoot, osNetwork{name: "ifupdown", dhcp: true}, true},
		{"Debian with OpenRC: ifupdown's networking, no DHCP client", debianOpenRCRoot, osNetwork{name: "ifupdown"}, true},
		{"Alpine: OpenRC, busybox ifup and udhcpc", alpineRoot, osNetwork{name: "ifupdown", dhcp: true}, true},
		{"Gentoo: OpenRC's netifrc is not a service seedinit knows", netifrcRoot, osNetwork{}, false},
		{"systemd-networkd", networkdRoot, osNetwork{name: "systemd-networkd", dhcp: true}, true},
		{"NetworkManager", networkManagerRoot, osNetwork{name: "NetworkManager", dhcp: true}, true},
		{"network-scripts", sysconfigRoot, osNetwork{name: "network-scripts", dhcp: true}, true},
		{"busybox appliance: none", busyboxRoot, osNetwork{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := detectOSNetwork(makeRoot(t, tc.files))
			if got != tc.want || found != tc.found {
				t.Errorf("detectOSNetwork = %+v, %v; want %+v, %v", got, found, tc.want, tc.found)
			}
		})
	}
}

// Mount tables. From an initramfs: its own API filesystems, the root on
// /sysroot (mount 30), what PID 1 mounted of the target's fstab, then the
// API filesystems lent to commands in the target (bound recursively).
var (
	initramfsMounts = []mountEntry{
		{ID: 20, Parent: 1, Point: "/", FSType: "rootfs", Source: "rootfs"},
		{ID: 21, Parent: 20, Point: "/proc", FSType: "proc", Source: "proc"},
		{ID: 22, Parent: 20, Point: "/sys", FSType: "sysfs", Source: "sysfs"},
		{ID: 23, Parent: 20, Point: "/dev", FSType: "devtmpfs", Source: "devtmpfs"},
		{ID: 24, Parent: 23, Point: "/dev/pts", FSType: "devpts", Source: "devpts"},
		{ID: 25, Parent: 20, Point: "/run", FSType: "tmpfs", Source: "tmpfs"},
		{ID: 30, Parent: 20, Point: "/sysroot", FSType: "ext4", Source: "/dev/vda1", Dev: 254<<8 | 1},
	}
	sysrootVar  = mountEntry{ID: 31, Parent: 30, Point: "/sysroot/var", FSType: "ext4", Source: "/dev/vda2", Dev: 254<<8 | 2}
	sysrootHome = mountEntry{ID: 32, Parent: 30, Point: "/sysroot/home", FSType: "ext4", Source: "/dev/vda3", Dev: 254<<8 | 3}
	lentDev     = mountEntry{ID: 40, Parent: 30, Point: "/sysroot/dev", FSType: "devtmpfs", Source: "devtmpfs"}
	lentPts     = mountEntry{ID: 41, Parent: 40, Point: "/sysroot/dev/pts", FSType: "devpts", Source: "devpts"}
	lentProc    = mountEntry{ID: 42, Parent: 30, Point: "/sysroot/proc", FSType: "proc", Source: "proc"}
	lentSys     = mountEntry{ID: 43, Parent: 30, Point: "/sysroot/sys", FSType: "sysfs", Source: "sysfs"}
	lentRun     = mountEntry{ID: 44, Parent: 30, Point: "/sysroot/run", FSType: "tmpfs", Source: "tmpfs"}
	lentAPI     = []mountEntry{lentDev, lentPts, lentProc, lentSys, lentRun}
	// Deepest first, the later first among equals.
	lentAPIReleased = []mountEntry{lentPts, lentRun, lentSys, lentProc, lentDev}

	// seedinit as /sbin/init on the real root (mount 20): the API
	// filesystems are there before PID 1 mounts the target's fstab.
	realRootMounts = []mountEntry{
		{ID: 20, Parent: 1, Point: "/", FSType: "ext4", Source: "/dev/nvme0n1p1", Dev: 259<<8 | 1},
		{ID: 21, Parent: 20, Point: "/proc", FSType: "proc", Source: "proc"},
		{ID: 22, Parent: 20, Point: "/sys", FSType: "sysfs", Source: "sysfs"},
		{ID: 23, Parent: 20, Point: "/dev", FSType: "devtmpfs", Source: "devtmpfs"},
		{ID: 24, Parent: 23, Point: "/dev/pts", FSType: "devpts", Source: "devpts"},
		{ID: 25, Parent: 20, Point: "/run", FSType: "tmpfs", Source: "tmpfs"},
	}
	realRootVar  = mountEntry{ID: 26, Parent: 20, Point: "/var", FSType: "ext4", Source: "/dev/nvme0n1p2", Dev: 259<<8 | 2}
	realRootKept = []string{"/dev/pts", "/run", "/dev", "/sys", "/proc"}
)

// before is the mount snapshot of table.
func before(table []mountEntry) mountSnapshot {
	s := mountSnapshot{}
	for _, m := range table {
		s[m.ID] = true
	}
	return s
}

func concat[T any](parts ...[]T) []T { return slices.Concat(parts...) }

func lease(iface, addr string) *dhcp.Lease {
	return &dhcp.Lease{Interface: iface, Address: netip.MustParsePrefix(addr)}
}

func addrs(a ...string) []netip.Addr {
	out := []netip.Addr{}
	for _, s := range a {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func nic(name, mac string, subnet ...model.Subnet) *model.Interface {
	return &model.Interface{Name: name, Type: model.TypePhysical, MACAddress: mac, Subnets: subnet}
}

var (
	dhcp4  = model.Subnet{Type: model.SubnetDHCP}
	static = func(addr string) model.Subnet {
		return model.Subnet{Type: model.SubnetStatic, Address: addr, Prefix: 24}
	}
)

// The handoff decided for each shape of root and boot. Each row is the
// snapshot PID 1 would take of such a boot and the whole plan: a decision
// that changes fails it.
func TestPlanHandoff(t *testing.T) {
	// The steps every handoff has, and an initramfs's: the mount points
	// before the root goes read-only, the switch after the timeline.
	base := func(initramfs bool, tail ...handoffStep) []handoffStep {
		s := []handoffStep{stepKeepStateInTarget, stepHandNetworkToOS, stepNoteLeasesToKeep, stepNoteFinalStageWait, stepReleaseTarget}
		if initramfs {
			s = append(s, stepMakeAPIMountPoints)
		}
		s = append(s, stepRestoreReadOnly, stepRecordTimeline)
		if initramfs {
			s = append(s, stepSwitchRoot)
		}
		return append(s, tail...)
	}
	osNet := func(files []string) (osNetwork, bool) { return detectOSNetwork(makeRoot(t, files)) }
	// An initramfs boot that provisioned the root with a seed: the
	// final stage runs after the handoff and seedinit is kept.
	provisioned := func(s handoffSnapshot) handoffSnapshot {
		s.Initramfs, s.Target, s.SeedSaved, s.KeepsSelf, s.Reaping = true, sysroot, true, true, true
		if s.Mounts == nil {
			s.Mounts = concat(initramfsMounts, lentAPI)
		}
		s.MountsBefore, s.TargetMount = before(initramfsMounts), 30
		return s
	}
	withOS := func(s handoffSnapshot, files []string) handoffSnapshot {
		s.OSNetwork, s.HasOSNetwork = osNet(files)
		return s
	}

	// A network config as the Debian e2e roots get it (mgmt0 static),
	// a second NIC on DHCP, and the search's lease on eth0.
	mgmt0 := nic("mgmt0", "52:54:00:e2:e0:61", static("10.98.0.10"))
	eth1 := nic("eth1", "52:54:00:e2:e0:62", dhcp4)
	twoNICs := &model.Network{Version: 2, Interfaces: []*model.Interface{mgmt0, eth1}}
	searchEth0 := lease("eth0", "10.77.0.100/24")
	configEth1 := lease("eth1", "10.77.0.101/24")
	twoNICsLinks := map[string][]netip.Addr{"mgmt0": addrs("10.98.0.10"), "eth1": addrs("10.77.0.101"), "eth0": addrs("10.77.0.100")}

	// A bond over two NICs and a management NIC.
	ens4 := &model.Interface{Name: "ens4", Type: model.TypePhysical, MACAddress: "52:54:00:00:00:04", BondMaster: "bond0"}
	ens5 := &model.Interface{Name: "ens5", Type: model.TypePhysical, MACAddress: "52:54:00:00:00:05", BondMaster: "bond0"}
	bond0 := &model.Interface{Name: "bond0", Type: model.TypeBond, IsBondMaster: true, Subnets: []model.Subnet{dhcp4}}
	bonded := &model.Network{Version: 1, Interfaces: []*model.Interface{mgmt0, ens4, ens5, bond0}}
	bondedLinks := map[string][]netip.Addr{"mgmt0": addrs("10.98.0.10"), "ens4": addrs(), "ens5": addrs(), "bond0": addrs("10.77.0.102"), "eth0": addrs("10.77.0.100")}

	// The e2e lease keeper's appliance: OpenStack's network_data.json
	// names eth0 (DHCP, leased by the search and again by the config)
	// and data0, a NIC plugged in after the boot.
	eth0 := nic("eth0", "52:54:00:e2:e0:31", dhcp4)
	data0 := nic("data0", "52:54:00:e2:e0:32", static("10.88.0.10"))
	appliance := &model.Network{Version: 1, Interfaces: []*model.Interface{eth0, data0}, DNS: model.DNS{Nameservers: []string{"10.77.0.53"}}}
	configEth0 := lease("eth0", "10.77.0.100/24")
	applianceLinks := map[string][]netip.Addr{"eth0": addrs("10.77.0.100")}
	applianceSnapshot := func(dhcpOpt string) handoffSnapshot {
		return provisioned(handoffSnapshot{
			DHCP: dhcpOpt, LiveNet: appliance, Ephemeral: []*dhcp.Lease{searchEth0}, LiveLeases: []*dhcp.Lease{configEth0},
			Links: applianceLinks, MissingNICs: []*model.Interface{data0},
		})
	}

	// Gentoo's OpenRC: a DHCP NIC with a stateful DHCPv6 lease too.
	v6 := &dhcp.Lease6{Interface: "eth0", Stateful: true, Address: netip.MustParseAddr("fd00::100")}
	dns6 := &dhcp.Lease6{Interface: "eth0", Stateful: false}
	gentooNet := &model.Network{Version: 2, Interfaces: []*model.Interface{eth0}}

	mountsErr := errors.New("read the mount table: no /proc")
	rootErr := errors.New("open /sysroot: no such file or directory")

	for _, tc := range []struct {
		name string
		snap handoffSnapshot
		want handoffPlan
	}{{
		// scripts/e2e usrmerge: init=/sbin/seedinit on a root whose /sbin
		// is usr/sbin, read-only as the kernel mounted it. The plan has
		// nothing of usrmerge: execRealInit tells itself among the inits
		// by identity, after the plan.
		name: "usrmerge, seedinit as /sbin/init on the real root, ro",
		snap: handoffSnapshot{
			Target: "/", ReadOnly: true, RemountedRW: true, SeedSaved: true, Reaping: true,
			MountsBefore: before(realRootMounts), Mounts: realRootMounts, TargetMount: 20,
		},
		want: handoffPlan{
			Steps:        base(false, stepStartAfterHandoff, stepStopReaping),
			KeepState:    true,
			Mounts:       mountPlan{Release: true, Keep: realRootKept},
			FinalWait:    finalWaitPlan{Note: true},
			ReadOnly:     "/",
			AfterHandoff: afterHandoffPlan{Final: true},
		},
	}, {
		// scripts/e2e split_var_home: /var and /home from the root's
		// fstab, mounted by PID 1 to provision them; rw.
		name: "split /var and /home, rw",
		snap: provisioned(handoffSnapshot{Mounts: concat(initramfsMounts, []mountEntry{sysrootVar, sysrootHome}, lentAPI)}),
		want: handoffPlan{
			Steps:        base(true, stepStartAfterHandoff, stepStopReaping),
			KeepState:    true,
			Mounts:       mountPlan{Release: true, Unmount: concat(lentAPIReleased, []mountEntry{sysrootHome, sysrootVar})},
			FinalWait:    finalWaitPlan{Mounts: []string{"/home", "/var"}, Note: true},
			AfterHandoff: afterHandoffPlan{Final: true, KeepSelf: true},
		},
	}, {
		// scripts/e2e ro_minimal_root.
		name: "ro on the command line",
		snap: provisioned(handoffSnapshot{ReadOnly: true}),
		want: handoffPlan{
			Steps:        base(true, stepStartAfterHandoff, stepStopReaping),
			KeepState:    true,
			Mounts:       mountPlan{Release: true, Unmount: lentAPIReleased},
			FinalWait:    finalWaitPlan{Note: true},
			ReadOnly:     sysroot,
			AfterHandoff: afterHandoffPlan{Final: true, KeepSelf: true},
		},
	}, {
		// Every interface goes to ifupdown, which runs dhclient for
		// the DHCP ones, and the search's lease is taken back: no keeper.
		// The bond goes first, as links on others do.
		name: "ifupdown with a DHCP client",
		snap: withOS(provisioned(handoffSnapshot{
			ReadOnly: true, LiveNet: bonded, Ephemeral: []*dhcp.Lease{searchEth0},
			LiveLeases: []*dhcp.Lease{lease("bond0", "10.77.0.102/24")}, Links: bondedLinks,
		}), debianDHCPRoot),
		want: handoffPlan{
			Steps:        base(true, stepStartAfterHandoff, stepStopReaping),
			KeepState:    true,
			Network:      networkPlan{Service: "ifupdown", ServiceDHCP: true, Hand: []string{"mgmt0", "ens4", "ens5", "bond0"}, TakeBack: []*dhcp.Lease{searchEth0}},
			Keeper:       keeperPlan{RootClient: "ifupdown"},
			Mounts:       mountPlan{Release: true, Unmount: lentAPIReleased},
			FinalWait:    finalWaitPlan{Network: []string{"bond0", "mgmt0", "ens4", "ens5", "eth0"}, Note: true},
			ReadOnly:     sysroot,
			AfterHandoff: afterHandoffPlan{Final: true, KeepSelf: true},
		},
	}, {
		// scripts/e2e debian (and a DHCP NIC it does not have): ifupdown
		// brings mgmt0 up from its static config; it cannot run DHCP,
		// so eth1 keeps its lease live, as does the search's eth0, and
		// the keeper keeps both.
		name: "ifupdown without a DHCP client",
		snap: withOS(provisioned(handoffSnapshot{
			ReadOnly: true, LiveNet: twoNICs, Ephemeral: []*dhcp.Lease{searchEth0}, LiveLeases: []*dhcp.Lease{configEth1}, Links: twoNICsLinks,
		}), debianRoot),
		want: handoffPlan{
			Steps:        base(true, stepStartAfterHandoff, stepStartLeaseKeeper, stepStopReaping),
			KeepState:    true,
			Network:      networkPlan{Service: "ifupdown", Hand: []string{"mgmt0"}},
			Keeper:       keeperPlan{Leases: []*dhcp.Lease{searchEth0, configEth1}, MoveToKept: true, Start: true},
			Mounts:       mountPlan{Release: true, Unmount: lentAPIReleased},
			FinalWait:    finalWaitPlan{Network: []string{"mgmt0"}, Note: true},
			ReadOnly:     sysroot,
			AfterHandoff: afterHandoffPlan{Final: true, KeepSelf: true},
		},
	}, {
		// scripts/e2e debian_openrc: OpenRC runs ifupdown's networking
		// script, which detectOSNetwork takes for ifupdown; no lease.
		name: "OpenRC on Debian: ifupdown, static",
		snap: withOS(provisioned(handoffSnapshot{
			ReadOnly: true, LiveNet: &model.Network{Version: 2, Interfaces: []*model.Interface{mgmt0}}, Links: map[string][]netip.Addr{"mgmt0": addrs("10.98.0.10")},
		}), debianOpenRCRoot),
		want: handoffPlan{
			Steps:        base(true, stepStartAfterHandoff, stepStopReaping),
			KeepState:    true,
			Network:      networkPlan{Service: "ifupdown", Hand: []string{"mgmt0"}},
			Mounts:       mountPlan{Release: true, Unmount: lentAPIReleased},
			FinalWait:    finalWaitPlan{Network: []string{"mgmt0"}, Note: true},
			ReadOnly:     sysroot,
			AfterHandoff: afterHandoffPlan{Final: true, KeepSelf: true},
		},
	}, {
		// netifrc is no service detectOSNetwork knows (and no renderer
		// writes its /etc/conf.d/net): the network stays as PID 1 set it
		// and the keeper keeps the DHCPv4 and stateful DHCPv6 leases; it
		// stands aside once netifrc's dhcpcd runs for eth0.
		name: "OpenRC with netifrc (Gentoo)",
		snap: withOS(provisioned(handoffSnapshot{
			LiveNet: gentooNet, LiveLeases: []*dhcp.Lease{configEth0}, LiveLeases6: []*dhcp.Lease6{v6, dns6},
			Links: map[string][]netip.Addr{"eth0": addrs("10.77.0.100", "fd00::100", "fe80::5054:ff:fee2:e031")},
		}), netifrcRoot),
		want: handoffPlan{
			Steps:        base(true, stepStartAfterHandoff, stepStartLeaseKeeper, stepStopReaping),
			KeepState:    true,
			Network:      networkPlan{Stays: true},
			Keeper:       keeperPlan{Leases: []*dhcp.Lease{configEth0}, Leases6: []*dhcp.Lease6{v6}, MoveToKept: true, Start: true},
			Mounts:       mountPlan{Release: true, Unmount: lentAPIReleased},
			FinalWait:    finalWaitPlan{Note: true},
			AfterHandoff: afterHandoffPlan{Final: true, KeepSelf: true},
		},
	}, {
		// scripts/e2e lease_keeper: no network service at all. The
		// keeper keeps eth0's lease (the config's, the later of the
		// two) and waits for data0, which is not there yet.
		name: "no network service (the appliance)",
		snap: withOS(applianceSnapshot(""), busyboxRoot),
		want: handoffPlan{
			Steps:     base(true, stepStartAfterHandoff, stepStartLeaseKeeper, stepStopReaping),
			KeepState: true,
			Network:   networkPlan{Stays: true},
			Keeper: keeperPlan{
				Leases:     []*dhcp.Lease{configEth0},
				LateNICs:   &model.Network{Version: 1, Interfaces: []*model.Interface{data0}, DNS: appliance.DNS},
				MoveToKept: true, Start: true,
			},
			Mounts:       mountPlan{Release: true, Unmount: lentAPIReleased},
			FinalWait:    finalWaitPlan{Note: true},
			AfterHandoff: afterHandoffPlan{Final: true, KeepSelf: true},
		},
	}, {
		// seedinit.dhcp=keep on a root whose service has a DHCP client:
		// that service takes every interface and the search's lease
		// back first, so nothing is live to keep, and no keeper starts.
		name: "seedinit.dhcp=keep, ifupdown with a DHCP client",
		snap: withOS(provisioned(handoffSnapshot{
			DHCP: DHCPKeep, LiveNet: twoNICs, Ephemeral: []*dhcp.Lease{searchEth0}, LiveLeases: []*dhcp.Lease{configEth1}, Links: twoNICsLinks,
		}), debianDHCPRoot),
		want: handoffPlan{
			Steps:        base(true, stepStartAfterHandoff, stepStopReaping),
			KeepState:    true,
			Network:      networkPlan{Service: "ifupdown", ServiceDHCP: true, Hand: []string{"mgmt0", "eth1"}, TakeBack: []*dhcp.Lease{searchEth0}},
			Mounts:       mountPlan{Release: true, Unmount: lentAPIReleased},
			FinalWait:    finalWaitPlan{Network: []string{"mgmt0", "eth1", "eth0"}, Note: true},
			AfterHandoff: afterHandoffPlan{Final: true, KeepSelf: true},
		},
	}, {
		// seedinit.dhcp=keep on the appliance: as without it.
		name: "seedinit.dhcp=keep, no network service",
		snap: withOS(applianceSnapshot(DHCPKeep), busyboxRoot),
		want: handoffPlan{
			Steps:     base(true, stepStartAfterHandoff, stepStartLeaseKeeper, stepStopReaping),
			KeepState: true,
			Network:   networkPlan{Stays: true},
			Keeper: keeperPlan{
				Leases:     []*dhcp.Lease{configEth0},
				LateNICs:   &model.Network{Version: 1, Interfaces: []*model.Interface{data0}, DNS: appliance.DNS},
				MoveToKept: true, Start: true,
			},
			Mounts:       mountPlan{Release: true, Unmount: lentAPIReleased},
			FinalWait:    finalWaitPlan{Note: true},
			AfterHandoff: afterHandoffPlan{Final: true, KeepSelf: true},
		},
	}, {
		// seedinit.dhcp=off: no keeper, and no NIC configured later.
		name: "seedinit.dhcp=off, no network service",
		snap: withOS(applianceSnapshot(DHCPOff), busyboxRoot),
		want: handoffPlan{
			Steps:        base(true, stepStartAfterHandoff, stepStopReaping),
			KeepState:    true,
			Network:      networkPlan{Stays: true},
			Mounts:       mountPlan{Release: true, Unmount: lentAPIReleased},
			FinalWait:    finalWaitPlan{Note: true},
			AfterHandoff: afterHandoffPlan{Final: true, KeepSelf: true},
		},
	}, {
		// /sbin/init on the real root, "rw", /var from its fstab: no
		// switch, no API filesystems lent (they are the root's own), and
		// seedinit is on the root already.
		name: "not from an initramfs: /sbin/init on the real root, rw, /var",
		snap: handoffSnapshot{
			Target: "/", SeedSaved: true, Reaping: true,
			MountsBefore: before(realRootMounts), Mounts: concat(realRootMounts, []mountEntry{realRootVar}), TargetMount: 20,
		},
		want: handoffPlan{
			Steps:        base(false, stepStartAfterHandoff, stepStopReaping),
			KeepState:    true,
			Mounts:       mountPlan{Release: true, Unmount: []mountEntry{realRootVar}, Keep: realRootKept},
			FinalWait:    finalWaitPlan{Mounts: []string{"/var"}, Note: true},
			AfterHandoff: afterHandoffPlan{Final: true},
		},
	}, {
		// seedinit.disable: nothing was provisioned or mounted in the
		// target; the root is switched to as the kernel's ro says.
		name: "disabled",
		snap: handoffSnapshot{Initramfs: true, Target: sysroot, Disabled: true, ReadOnly: true, Reaping: true},
		want: handoffPlan{
			Steps:    base(true, stepStopReaping),
			ReadOnly: sysroot,
		},
	}, {
		// seedinit.kexec= that failed once it had released the target:
		// its state was kept and its mounts released already.
		name: "after a kexec that failed",
		snap: provisioned(handoffSnapshot{Released: true, Mounts: []mountEntry{}, ReadOnly: true}),
		want: handoffPlan{
			Steps:        base(true, stepStartAfterHandoff, stepStopReaping),
			ReadOnly:     sysroot,
			AfterHandoff: afterHandoffPlan{Final: true, KeepSelf: true},
		},
	}, {
		// What could not be looked at fails the steps that need it, as
		// each did when it looked itself; the others run.
		name: "the mount table and the target could not be read",
		snap: provisioned(handoffSnapshot{MountsErr: mountsErr, OSNetworkErr: rootErr, LiveNet: twoNICs, ReadOnly: true}),
		want: handoffPlan{
			Steps:        base(true, stepStartAfterHandoff, stepStopReaping),
			KeepState:    true,
			Network:      networkPlan{Err: rootErr},
			Keeper:       keeperPlan{Err: rootErr},
			Mounts:       mountPlan{Release: true, Err: mountsErr},
			FinalWait:    finalWaitPlan{Err: mountsErr},
			ReadOnly:     sysroot,
			AfterHandoff: afterHandoffPlan{Final: true, KeepSelf: true},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := planHandoff(tc.snap)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreUnexported(dhcp.Lease{}, dhcp.Lease6{}), cmpopts.EquateComparable(netip.Prefix{}, netip.Addr{}), cmpopts.EquateErrors(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("planHandoff (-want +got):\n%s", diff)
			}
			// The executor runs them in the order its doc comment says.
			if !inOrder(got.Steps) {
				t.Errorf("steps %q are not in handoffSteps' order", got.Steps)
			}
		})
	}
}

// inOrder reports whether steps are handoffSteps' own, in their order.
func inOrder(steps []handoffStep) bool {
	last := -1
	for _, s := range steps {
		i := slices.IndexFunc(handoffSteps, func(d handoffStepDef) bool { return d.step == s })
		if i <= last {
			return false
		}
		last = i
	}
	return true
}

// carryOutHandoff's doc comment lists the steps handoffSteps runs, in
// their order, and then what it does itself; each step of handoffSteps
// calls the function it is named for.
func TestHandoffDocListsTheSteps(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "handoff.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var executor *ast.FuncDecl
	var table *ast.CompositeLit
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Name.Name == "carryOutHandoff" {
				executor = n
			}
		case *ast.ValueSpec:
			if len(n.Names) == 1 && n.Names[0].Name == "handoffSteps" && len(n.Values) == 1 {
				table, _ = n.Values[0].(*ast.CompositeLit)
			}
		}
		return true
	})
	if executor == nil || executor.Doc == nil || table == nil {
		t.Fatal("handoff.go has no carryOutHandoff with a doc comment, or no handoffSteps table")
	}

	// "  3. noteLeasesToKeep: ..." in the doc comment.
	var documented []string
	item := regexp.MustCompile(`^\s*(\d+)\.\s+(\w+)`)
	for _, line := range strings.Split(executor.Doc.Text(), "\n") {
		if m := item.FindStringSubmatch(line); m != nil {
			documented = append(documented, m[2])
		}
	}
	// The steps, then the calls the executor ends with.
	var code []string
	for _, d := range handoffSteps {
		code = append(code, string(d.step))
	}
	body := executor.Body.List
	for _, st := range body[len(body)-2:] {
		if name := calledMethod(st); name != "" {
			code = append(code, name)
		}
	}
	if !slices.Equal(documented, code) {
		t.Errorf("carryOutHandoff's doc comment lists\n\t%q\nthe code runs\n\t%q", documented, code)
	}

	if len(table.Elts) != len(handoffSteps) {
		t.Fatalf("handoffSteps has %d entries in the source, %d at run time", len(table.Elts), len(handoffSteps))
	}
	for i, e := range table.Elts {
		lit, _ := e.(*ast.CompositeLit)
		var run *ast.FuncLit
		if lit != nil && len(lit.Elts) == 4 {
			run, _ = lit.Elts[3].(*ast.FuncLit)
		}
		want := string(handoffSteps[i].step)
		calls := false
		if run != nil {
			ast.Inspect(run.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == want {
						calls = true
					}
				}
				return true
			})
		}
		if !calls {
			t.Errorf("handoffSteps[%d], step %s, does not call %s", i, want, want)
		}
	}
}

// calledMethod is the method st calls, as in "p.rescue(err)".
func calledMethod(st ast.Stmt) string {
	es, ok := st.(*ast.ExprStmt)
	if !ok {
		return ""
	}
	c, ok := es.X.(*ast.CallExpr)
	if !ok {
		return ""
	}
	if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
		return sel.Sel.Name
	}
	return ""
}
