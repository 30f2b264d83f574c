package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/internal/nstest"
	"github.com/seedinit/seedinit/internal/testenv"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/keeper"
	"github.com/seedinit/seedinit/netup/model"
)

// The lease keeper is started by PID 1, but a person may run it by hand:
// what it refuses names what and where.
func TestDHCPKeepRefusals(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	empty := filepath.Join(dir, "empty.json")
	for name, content := range map[string]string{bad: `{"leases": 3}`, empty: `{"leases": []}`} {
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dhcp"}, "usage: seedinit dhcp keep"},
		{[]string{"dhcp", "renew"}, "usage: seedinit dhcp keep"},
		{[]string{"dhcp", "keep", "--state", filepath.Join(dir, "none.json")}, "none.json: no such file"},
		{[]string{"dhcp", "keep", "--state", bad}, "bad.json: json: cannot unmarshal"},
		{[]string{"dhcp", "keep", "--state", empty}, "none to keep"},
		{[]string{"dhcp", "keep", "--state", empty, "--network", filepath.Join(dir, "net.json")}, "net.json: no such file"},
	} {
		code, _, stderr := run(t, c.args...)
		if code != exitError || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, exitError, c.want)
		}
	}
}

// The keeper's move to the root's copy execs `seedinit dhcp keep` with
// the arguments netup/keeper writes: these flags must read them back as
// the same keeper (without --move-to, which the root's copy has no use
// for).
func TestDHCPKeepArgsReadBack(t *testing.T) {
	for _, want := range []keeper.Options{
		{State: "/run/seedinit/dhcp-leases.json"},
		{State: "/run/s.json", Network: "/run/seedinit/network-live.json"},
		{State: "/run/s.json", Network: "/run/n.json", Debug: true},
		{State: "/run/s.json", Debug: true},
	} {
		var stderr strings.Builder
		got, code, ok := parseDHCPKeep(want.Args()[1:], &stderr)
		if !ok || code != exitOK {
			t.Fatalf("%q: exit %d: %s", want.Args(), code, stderr.String())
		}
		if got.State != want.State || got.Network != want.Network || got.Debug != want.Debug || got.MoveTo != "" {
			t.Errorf("%q read back as state %q network %q debug %v move-to %q; want %+v",
				want.Args(), got.State, got.Network, got.Debug, got.MoveTo, want)
		}
	}
}

// The real `seedinit dhcp keep`, as PID 1 starts it: from a copy of the
// program that was deleted (the initramfs's), told to move to the copy
// in the root, with two NICs of the network config still to come. The
// first comes while its server ignores it: its exchange fails, and the
// keeper struck it from the network file with no lease to keep, so no
// one ever asked for its lease again. The second comes and, while the
// keeper is configuring it (its server answers 8 s late), the root's copy
// appears and the keeper hands over: the exchange cut short must not
// lose it either. After the handover the keeper runs from the root's
// copy, and both NICs get their leases, kept beside the first one's.
func TestDHCPKeepHandsOverWithLateNICs(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	dir := t.TempDir()
	nstest.Veth(t, "eth0", "srv0", "52:54:00:00:0a:01")
	nstest.Up(t, "srv0", "192.0.2.1/24")
	// One server for every NIC, on the veth peers; with ignoring, it does
	// not answer late0.
	startServer := func(ignoring bool) *exec.Cmd {
		args := []string{"--interface=srv0", "--interface=srv1", "--interface=srv2", "--bind-dynamic",
			"--dhcp-range=192.0.2.50,192.0.2.50,255.255.255.0,2m",
			"--dhcp-range=198.51.100.50,198.51.100.50,255.255.255.0,2m",
			"--dhcp-range=203.0.113.50,203.0.113.50,255.255.255.0,2m",
			"--dhcp-mac=set:slow,52:54:00:00:0a:03", "--dhcp-reply-delay=tag:slow,8"}
		if ignoring {
			args = append(args, "--dhcp-mac=set:ignored,52:54:00:00:0a:02", "--dhcp-ignore=tag:ignored")
		}
		return nstest.Dnsmasq(t, dir, args...)
	}
	server := startServer(true)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lease, err := dhcp.Acquire(ctx, "eth0", dhcp.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Apply(); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "dhcp-leases.json")
	if err := dhcp.NewKeepState([]*dhcp.Lease{lease}, nil).Write(state); err != nil {
		t.Fatal(err)
	}
	network := filepath.Join(dir, "network-live.json")
	dhcpNIC := func(name, mac string) *model.Interface {
		return &model.Interface{Name: name, Type: model.TypePhysical, MACAddress: mac, Subnets: []model.Subnet{{Type: model.SubnetDHCP}}}
	}
	if err := keeper.WriteNetwork(network, &model.Network{Version: 2, Interfaces: []*model.Interface{
		dhcpNIC("late0", "52:54:00:00:0a:02"), dhcpNIC("late1", "52:54:00:00:0a:03"),
	}}); err != nil {
		t.Fatal(err)
	}

	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	initramfsCopy, rootCopy := filepath.Join(dir, "initramfs-seedinit"), filepath.Join(dir, "root-seedinit")
	if err := os.WriteFile(initramfsCopy, self, 0o755); err != nil {
		t.Fatal(err)
	}
	proc := exec.Command(initramfsCopy, "dhcp", "keep", "--state", state, "--network", network, "--move-to", rootCopy)
	proc.Env = append(os.Environ(), asCommandEnv+"=1", waitGoneEnv+"="+initramfsCopy)
	var keeperLog testenv.Buffer
	proc.Stdout, proc.Stderr = &keeperLog, &keeperLog
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()
	t.Cleanup(func() {
		proc.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			proc.Process.Kill()
		}
		t.Logf("the keeper:\n%s", keeperLog.String())
	})
	os.Remove(initramfsCopy) // the switch deletes the initramfs's copy

	waitUntil := func(limit time.Duration, what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond() {
			select {
			case err := <-exited:
				t.Fatalf("the keeper ended (%v) before %s", err, what)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %s: %s", limit, what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// late0 comes and gets no answer.
	nstest.Veth(t, "eth5", "srv1", "52:54:00:00:0a:02")
	nstest.Up(t, "srv1", "198.51.100.1/24")
	waitUntil(60*time.Second, "the keeper gave up late0's first exchange", func() bool {
		return strings.Contains(keeperLog.String(), "configure a NIC that came later")
	})
	// late1 comes; once the keeper is configuring it, the root's copy
	// appears, and the server answers late0 from now on.
	nstest.Veth(t, "eth6", "srv2", "52:54:00:00:0a:03")
	nstest.Up(t, "srv2", "203.0.113.1/24")
	waitUntil(20*time.Second, "the keeper saw late1", func() bool {
		return strings.Count(keeperLog.String(), "a NIC of the network config appeared") >= 2
	})
	if err := os.WriteFile(rootCopy, self, 0o755); err != nil {
		t.Fatal(err)
	}
	server.Process.Kill()
	server.Wait()
	startServer(false)
	waitUntil(30*time.Second, "the keeper went on from the root's copy", func() bool {
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(proc.Process.Pid) + "/exe")
		return exe == rootCopy
	})
	leases := func() map[string]dhcp.KeptLease {
		st, err := dhcp.ReadKeepState(state)
		if err != nil {
			return nil
		}
		m := map[string]dhcp.KeptLease{}
		for _, l := range st.Leases {
			m[l.Interface] = l
		}
		return m
	}
	// The state file holds a lease before the NIC leaves the network
	// file: both are looked at.
	waitUntil(90*time.Second, "both late NICs' leases kept, and no NIC left to come", func() bool {
		l := leases()
		n, err := keeper.ReadNetwork(network)
		return l["late0"].State == "bound" && l["late1"].State == "bound" && err == nil && len(n.Interfaces) == 0
	})
	for nic, want := range map[string]string{"late0": "198.51.100.50/24", "late1": "203.0.113.50/24"} {
		if got := nstest.Addrs(t, nic, netlink.FAMILY_V4); !slices.Equal(got, []string{want}) {
			t.Errorf("%s's addresses %q, want its lease's %s", nic, got, want)
		}
	}
	if l := leases()["eth0"]; l.State != "bound" || l.Address != "192.0.2.50/24" {
		t.Errorf("eth0's lease after the handover: %+v, want it still bound", l)
	}
}
