package dhcp

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/server4"
	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/netup/nstest"
)

func TestTimesFrom(t *testing.T) {
	at := 100 * time.Second
	for _, c := range []struct {
		name                  string
		length, t1, t2        time.Duration
		wantT1, wantT2, wantE time.Duration
		infinite              bool
	}{
		{name: "the server's T1 and T2", length: 3600 * time.Second, t1: 600 * time.Second, t2: 1200 * time.Second, wantT1: 700 * time.Second, wantT2: 1300 * time.Second, wantE: 3700 * time.Second},
		{name: "none sent: half and seven eighths", length: 800 * time.Second, wantT1: 500 * time.Second, wantT2: 800 * time.Second, wantE: 900 * time.Second},
		{name: "T1 past the end", length: 800 * time.Second, t1: 900 * time.Second, wantT1: 500 * time.Second, wantT2: 800 * time.Second, wantE: 900 * time.Second},
		{name: "T2 before T1", length: 800 * time.Second, t1: 600 * time.Second, t2: 300 * time.Second, wantT1: 700 * time.Second, wantT2: 800 * time.Second, wantE: 900 * time.Second},
		{name: "infinite", length: infiniteLease, infinite: true},
		{name: "no lease time", length: 0, infinite: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := timesFrom(at, c.length, c.t1, c.t2, c.length/2, c.length*7/8)
			if got.infinite != c.infinite {
				t.Fatalf("infinite = %v, want %v", got.infinite, c.infinite)
			}
			if !c.infinite && (got.t1 != c.wantT1 || got.t2 != c.wantT2 || got.end != c.wantE) {
				t.Errorf("T1 %v T2 %v end %v, want %v %v %v", got.t1, got.t2, got.end, c.wantT1, c.wantT2, c.wantE)
			}
		})
	}
}

// fakeProc makes a /proc with the given processes: comm, then the
// command line's words.
func fakeProc(t *testing.T, procs map[int][]string) string {
	t.Helper()
	dir := t.TempDir()
	for pid, words := range procs {
		d := filepath.Join(dir, strconv.Itoa(pid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "comm"), []byte(words[0]+"\n"), 0o644)
		os.WriteFile(filepath.Join(d, "cmdline"), []byte(strings.Join(words[1:], "\x00")+"\x00"), 0o644)
	}
	return dir
}

func testLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestClaimedNICs(t *testing.T) {
	sys := t.TempDir()
	for _, n := range []string{"eth0", "eth1", "lan0"} {
		os.Mkdir(filepath.Join(sys, n), 0o755)
	}
	nics := []string{"eth0", "eth1"}
	for _, c := range []struct {
		name  string
		procs map[int][]string
		want  map[string]string
	}{
		{name: "nothing else runs", procs: map[int][]string{10: {"sshd", "/usr/sbin/sshd", "-D"}}, want: map[string]string{}},
		{name: "dhclient for one NIC", procs: map[int][]string{20: {"dhclient", "/sbin/dhclient", "-4", "-v", "-pf", "/run/dhclient.eth1.pid", "-lf", "/var/lib/dhcp/dhclient.eth1.leases", "eth1"}},
			want: map[string]string{"eth1": "dhclient"}},
		{name: "dhclient for another NIC", procs: map[int][]string{20: {"dhclient", "dhclient", "lan0"}}, want: map[string]string{}},
		{name: "dhcpcd with no NIC serves all", procs: map[int][]string{30: {"dhcpcd", "dhcpcd", "-q", "-b"}}, want: map[string]string{"eth0": "dhcpcd", "eth1": "dhcpcd"}},
		{name: "udhcpc's default is eth0", procs: map[int][]string{40: {"udhcpc", "udhcpc", "-b", "-p", "/run/udhcpc.pid"}}, want: map[string]string{"eth0": "udhcpc"}},
		{name: "udhcpc -i eth1", procs: map[int][]string{40: {"udhcpc", "udhcpc", "-i", "eth1", "-b"}}, want: map[string]string{"eth1": "udhcpc"}},
		{name: "udhcpc -ieth1", procs: map[int][]string{40: {"udhcpc", "udhcpc", "-ieth1"}}, want: map[string]string{"eth1": "udhcpc"}},
		{name: "udhcpc --interface=lan0", procs: map[int][]string{40: {"udhcpc", "udhcpc", "--interface=lan0"}}, want: map[string]string{}},
		{name: "networkd takes every NIC", procs: map[int][]string{50: {"systemd-network", "/lib/systemd/systemd-networkd"}}, want: map[string]string{"eth0": "systemd-network", "eth1": "systemd-network"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := claimedNICs(fakeProc(t, c.procs), sys, nics)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("claimed (-want +got):\n%s", diff)
			}
		})
	}
}

// serverApart puts the server's end of a veth pair (srv, 192.0.2.1/24)
// in a network namespace of its own, held by a sleeping process, and
// returns the nsenter arguments that run a command there: with both ends
// in one namespace, the kernel would carry the client's unicast (its
// renewals, its release) over loopback, which no server sees on srv.
func serverApart(t *testing.T, client string) []string {
	t.Helper()
	for _, tool := range []string{"unshare", "nsenter", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	nstest.Veth(t, client, "srv", "52:54:00:12:34:56")
	holder := exec.Command("unshare", "--net", "sleep", "600")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	enter := []string{"nsenter", "--net=/proc/" + strconv.Itoa(holder.Process.Pid) + "/ns/net"}
	srv, err := netlink.LinkByName("srv")
	if err != nil {
		t.Fatal(err)
	}
	// unshare execs sleep once the namespace is made; until then the
	// process is still in ours.
	own, _ := os.Readlink("/proc/self/ns/net")
	waitFor(t, 5*time.Second, "the server's namespace", func() bool {
		ns, _ := os.Readlink("/proc/" + strconv.Itoa(holder.Process.Pid) + "/ns/net")
		return ns != "" && ns != own
	})
	if err := netlink.LinkSetNsPid(srv, holder.Process.Pid); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ip", "link", "set", "lo", "up"}, {"ip", "addr", "add", "192.0.2.1/24", "dev", "srv"}, {"ip", "link", "set", "srv", "up"}} {
		if out, err := exec.Command(enter[0], append(enter[1:], args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	return enter
}

// startDnsmasq4 runs dnsmasq on srv, in the namespace enter names, with
// a lease of its minimum (two minutes) and T1 and T2 of t1 and t2
// seconds, handing out addr only.
func startDnsmasq4(t *testing.T, enter []string, addr string, t1, t2 int) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	dnsmasq, err := exec.LookPath("dnsmasq")
	if err != nil {
		t.Skip("dnsmasq is not installed (apt-get install dnsmasq-base)")
	}
	dir := t.TempDir()
	args := append(enter[1:], dnsmasq, "--keep-in-foreground", "--no-daemon", "--conf-file=/dev/null",
		"--user=root", "--port=0", "--interface=srv", "--bind-interfaces", "--no-resolv", "--no-hosts",
		"--dhcp-authoritative", "--no-ping", "--log-dhcp",
		"--dhcp-leasefile="+filepath.Join(dir, "leases"), "--pid-file="+filepath.Join(dir, "pid"),
		"--dhcp-range="+addr+","+addr+",255.255.255.0,2m",
		"--dhcp-option=option:T1,"+strconv.Itoa(t1), "--dhcp-option=option:T2,"+strconv.Itoa(t2),
		"--dhcp-option=3,192.0.2.1", "--dhcp-option=6,192.0.2.53",
	)
	cmd := exec.Command(enter[0], args...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

func stopDnsmasq(t *testing.T, cmd *exec.Cmd, out *lockedBuffer) {
	cmd.Process.Kill()
	cmd.Wait()
	t.Logf("dnsmasq:\n%s", out.String())
}

// waitFor polls cond every 100ms for at most limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mustLink(t *testing.T, name string) netlink.Link {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func keptState(t *testing.T, path string) KeptLease {
	t.Helper()
	st, err := ReadKeepState(path)
	if err != nil || len(st.Leases) != 1 {
		t.Fatalf("state %s: %v %+v", path, err, st)
	}
	return st.Leases[0]
}

// TestKeepDnsmasq keeps a lease from dnsmasq through several renewals,
// takes the other address a new server gives after its NAK, and releases
// it when told to stop.
func TestKeepDnsmasq(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	enter := serverApart(t, "eth0")
	if err := netlink.LinkSetUp(mustLink(t, "eth0")); err != nil {
		t.Fatal(err)
	}
	cmd, out := startDnsmasq4(t, enter, "192.0.2.100", 2, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lease *Lease
	var err error
	for attempt := 0; attempt < 3 && lease == nil; attempt++ {
		lease, err = Acquire(ctx, "eth0", Options{Timeout: 2 * time.Second, Retries: 2})
	}
	if err != nil {
		stopDnsmasq(t, cmd, out)
		t.Fatal(err)
	}
	if err := lease.Apply(); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "dhcp-leases.json")
	st := NewKeepState([]*Lease{lease}, nil)
	if err := st.Write(state); err != nil {
		t.Fatal(err)
	}
	st, err = ReadKeepState(state)
	if err != nil {
		t.Fatal(err)
	}
	keepCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logs := &lockedBuffer{}
	go func() {
		done <- Keep(keepCtx, st, KeepOptions{StateFile: state, ProcDir: t.TempDir(), ClaimPoll: 200 * time.Millisecond,
			DHCP: Options{Timeout: time.Second, Retries: 2, Log: testLogger(logs)}})
	}()
	defer func() { t.Logf("keeper:\n%s", logs.String()) }()

	acks := func(o *lockedBuffer, addr string) int { return strings.Count(o.String(), "DHCPACK(srv) "+addr+" ") }
	// Renewals go to the server from the leased address, not broadcast.
	unicast := func(o *lockedBuffer) bool { return !strings.Contains(o.String(), "broadcast response") }
	first := keptState(t, state)
	waitFor(t, 30*time.Second, "three renewals", func() bool { return acks(out, "192.0.2.100") >= 4 })
	if !unicast(out) {
		t.Errorf("the server answered a broadcast renewal; want unicast ones")
	}
	if diff := cmp.Diff([]string{"192.0.2.100/24"}, nstest.Addrs(t, "eth0", netlink.FAMILY_V4)); diff != "" {
		t.Errorf("addresses after the renewals (-want +got):\n%s", diff)
	}
	if got := keptState(t, state); got.Address != "192.0.2.100/24" || got.End <= first.End || got.Server != "192.0.2.1" {
		t.Errorf("state after the renewals = %+v, want 192.0.2.100/24 from 192.0.2.1 ending later than %d", got, first.End)
	}
	stopDnsmasq(t, cmd, out)

	// Another server for the link, with another address: it NAKs the
	// renewal of an address it never gave.
	cmd, out = startDnsmasq4(t, enter, "192.0.2.150", 2, 4)
	defer func() { stopDnsmasq(t, cmd, out) }()
	waitFor(t, 30*time.Second, "the new address applied", func() bool {
		return slices.Equal(nstest.Addrs(t, "eth0", netlink.FAMILY_V4), []string{"192.0.2.150/24"})
	})
	if !strings.Contains(out.String(), "DHCPNAK(srv) 192.0.2.100") {
		t.Errorf("the new server did not NAK the old address")
	}
	waitFor(t, 10*time.Second, "the state file names the new address", func() bool { return keptState(t, state).Address == "192.0.2.150/24" })
	if diff := cmp.Diff([]string{"0.0.0.0/0 via 192.0.2.1", "192.0.2.0/24"}, nstest.Routes(t, "eth0", netlink.FAMILY_V4)); diff != "" {
		t.Errorf("routes with the new address (-want +got):\n%s", diff)
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the keeper did not stop")
	}
	waitFor(t, 5*time.Second, "dnsmasq saw the release", func() bool { return strings.Contains(out.String(), "DHCPRELEASE(srv) 192.0.2.150") })
	if got := nstest.Addrs(t, "eth0", netlink.FAMILY_V4); len(got) != 0 {
		t.Errorf("addresses after the release = %v, want none", got)
	}
	if got := keptState(t, state); got.State != "released" {
		t.Errorf("state after the release = %q, want released", got.State)
	}
}

// TestKeepLeaseEnds: a server that stops answering has the keeper rebind,
// take the address off at the lease's end, and ask again until a server
// answers, with another address.
func TestKeepLeaseEnds(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	serverLink(t, "eth0")
	var offer atomic.Value // net.IP to give, nil: silent
	offer.Store(net.IPv4(192, 0, 2, 50))
	var requests atomic.Int32
	handler := func(conn net.PacketConn, peer net.Addr, m *dhcpv4.DHCPv4) {
		requests.Add(1)
		ip, _ := offer.Load().(net.IP)
		if ip == nil {
			return
		}
		var mt dhcpv4.MessageType
		switch m.MessageType() {
		case dhcpv4.MessageTypeDiscover:
			mt = dhcpv4.MessageTypeOffer
		case dhcpv4.MessageTypeRequest:
			mt = dhcpv4.MessageTypeAck
		default:
			return
		}
		reply, err := dhcpv4.NewReplyFromRequest(m,
			dhcpv4.WithMessageType(mt), dhcpv4.WithYourIP(ip),
			dhcpv4.WithServerIP(net.IPv4(192, 0, 2, 1)),
			dhcpv4.WithOption(dhcpv4.OptServerIdentifier(net.IPv4(192, 0, 2, 1))),
			dhcpv4.WithNetmask(net.CIDRMask(24, 32)),
			dhcpv4.WithLeaseTime(6),
			dhcpv4.WithOption(dhcpv4.OptRenewTimeValue(2*time.Second)),
			dhcpv4.WithOption(dhcpv4.OptRebindingTimeValue(3*time.Second)),
		)
		if err != nil {
			t.Errorf("build reply: %v", err)
			return
		}
		conn.WriteTo(reply.ToBytes(), &net.UDPAddr{IP: net.IPv4bcast, Port: dhcpv4.ClientPort})
	}
	server, err := server4.NewServer("srv", &net.UDPAddr{IP: net.IPv4zero, Port: dhcpv4.ServerPort}, handler)
	if err != nil {
		t.Fatal(err)
	}
	go server.Serve()
	defer server.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lease, err := Acquire(ctx, "eth0", Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Apply(); err != nil {
		t.Fatal(err)
	}
	offer.Store(net.IP(nil))
	logs := &lockedBuffer{}
	defer func() { t.Logf("keeper:\n%s", logs.String()) }()
	keepCtx, stop := context.WithCancel(context.Background())
	state := filepath.Join(t.TempDir(), "state.json")
	done := make(chan error, 1)
	go func() {
		done <- Keep(keepCtx, NewKeepState([]*Lease{lease}, nil), KeepOptions{StateFile: state, ProcDir: t.TempDir(),
			DHCP: Options{Timeout: 500 * time.Millisecond, Retries: 1, Log: testLogger(logs)}})
	}()
	// The keeper writes in the test's directories until it has stopped.
	defer func() { stop(); <-done }()
	waitFor(t, 15*time.Second, "the ended lease taken off", func() bool { return len(nstest.Addrs(t, "eth0", netlink.FAMILY_V4)) == 0 })
	if requests.Load() < 2 {
		t.Errorf("the keeper sent %d requests before the end, want a renewal and a rebinding at least", requests.Load())
	}
	if got := keptState(t, state); !strings.HasPrefix(got.State, "lost") && got.State != "asking for a new lease" {
		t.Errorf("state after the end = %q, want lost or asking", got.State)
	}
	offer.Store(net.IPv4(192, 0, 2, 60))
	waitFor(t, 30*time.Second, "a new lease after the end", func() bool {
		return slices.Equal(nstest.Addrs(t, "eth0", netlink.FAMILY_V4), []string{"192.0.2.60/24"})
	})
}

// TestKeepStandsAside: a DHCP client of the image's own for the NIC makes
// the keeper stop keeping that lease, without releasing it.
func TestKeepStandsAside(t *testing.T) {
	ack, err := dhcpv4.New(dhcpv4.WithMessageType(dhcpv4.MessageTypeAck), dhcpv4.WithYourIP(net.IPv4(192, 0, 2, 70)),
		dhcpv4.WithNetmask(net.CIDRMask(24, 32)), dhcpv4.WithLeaseTime(3600),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(net.IPv4(192, 0, 2, 1))))
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state.json")
	if err := (&KeepState{Leases: []KeptLease{{Interface: "eth7", Family: 4, ACK: ack.ToBytes(), AcquiredBoot: bootTime()}}}).Write(state); err != nil {
		t.Fatal(err)
	}
	st, err := ReadKeepState(state)
	if err != nil {
		t.Fatal(err)
	}
	proc := fakeProc(t, map[int][]string{77: {"dhclient", "/sbin/dhclient", "-4", "eth7"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Keep(ctx, st, KeepOptions{StateFile: state, ProcDir: proc, SysClassNet: t.TempDir(), ClaimPoll: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the keeper did not stand aside")
	}
	got := keptState(t, state)
	if got.State != "stood aside for dhclient" || got.Address != "192.0.2.70/24" {
		t.Errorf("state = %q, address %q; want stood aside for dhclient, 192.0.2.70/24", got.State, got.Address)
	}
	// Started again (the move to the root's copy), it keeps nothing.
	st, _ = ReadKeepState(state)
	if err := Keep(ctx, st, KeepOptions{ProcDir: t.TempDir()}); err == nil {
		t.Error("a keeper started on a state that stood aside kept something")
	}
}

// TestKeep6MessagesDnsmasq sends the keeper's DHCPv6 Renew, Rebind and
// Release for a lease from dnsmasq, which must answer each for the same
// address (the keeper's timing is the same as for DHCPv4).
func TestKeep6MessagesDnsmasq(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	v6ServerLink(t, "eth0")
	startDnsmasq6(t, "--dhcp-range=fd00:77::100,fd00:77::1ff,64,2m")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var lease *Lease6
	var err error
	for attempt := 0; attempt < 3 && lease == nil; attempt++ {
		lease, err = Acquire6(ctx, "eth0", Options{Timeout: 2 * time.Second, Retries: 2})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Apply(); err != nil {
		t.Fatal(err)
	}
	st := NewKeepState(nil, []*Lease6{lease})
	slots, err := st.slots()
	if err != nil || len(slots) != 1 || slots[0].lease == nil {
		t.Fatalf("the lease read back from its state: %v %v", slots, err)
	}
	kept := slots[0].lease
	if tm := kept.times(); tm.infinite || tm.end-tm.t1 <= 0 {
		t.Errorf("times %+v, want a finite lease with T1 before its end", tm)
	}
	for _, rebind := range []bool{false, true} {
		renewed, err := kept.renew(ctx, Options{Timeout: 2 * time.Second, Retries: 2}, rebind)
		if err != nil {
			t.Fatalf("renew (rebind %v): %v", rebind, err)
		}
		if renewed.address() != lease.Address.String() {
			t.Errorf("renewed (rebind %v) to %s, want %s", rebind, renewed.address(), lease.Address)
		}
		kept = renewed
	}
	if err := kept.release(); err != nil {
		t.Fatalf("release: %v", err)
	}
}
