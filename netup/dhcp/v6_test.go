package dhcp

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/iana"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/nstest"

	"github.com/seedinit/seedinit/internal/testenv"
)

// reply6 builds a DHCPv6 Reply with the given options.
func reply6(t testing.TB, opts ...dhcpv6.Option) *dhcpv6.Message {
	t.Helper()
	m, err := dhcpv6.NewMessage()
	if err != nil {
		t.Fatal(err)
	}
	m.MessageType = dhcpv6.MessageTypeReply
	for _, o := range opts {
		m.AddOption(o)
	}
	return m
}

func iaNA(status *dhcpv6.OptStatusCode, addrs ...*dhcpv6.OptIAAddress) *dhcpv6.OptIANA {
	ia := &dhcpv6.OptIANA{IaId: [4]byte{0, 0, 0, 1}, T1: 300 * time.Second, T2: 480 * time.Second}
	for _, a := range addrs {
		ia.Options.Add(a)
	}
	if status != nil {
		ia.Options.Add(status)
	}
	return ia
}

func iaAddr(ip string, valid time.Duration) *dhcpv6.OptIAAddress {
	return &dhcpv6.OptIAAddress{IPv6Addr: net.ParseIP(ip), PreferredLifetime: valid / 2, ValidLifetime: valid}
}

func TestFromReply6(t *testing.T) {
	dns := dhcpv6.OptDNS(net.ParseIP("fd00:77::53"), net.ParseIP("fd00:77::54"))
	search := dhcpv6.WithDomainSearchList("example.com", "corp.example")
	tests := []struct {
		name     string
		stateful bool
		opts     []dhcpv6.Option
		modify   dhcpv6.Modifier
		want     *Lease6
		wantErr  string
	}{
		{
			name: "stateful with DNS and search", stateful: true,
			opts:   []dhcpv6.Option{iaNA(nil, iaAddr("fd00:77::150", time.Hour)), dns},
			modify: search,
			want: &Lease6{Interface: "eth0", Stateful: true, Address: netip.MustParseAddr("fd00:77::150"),
				PreferredLifetime: 30 * time.Minute, ValidLifetime: time.Hour, T1: 300 * time.Second, T2: 480 * time.Second,
				DNS: []netip.Addr{netip.MustParseAddr("fd00:77::53"), netip.MustParseAddr("fd00:77::54")}, Search: []string{"example.com", "corp.example"}},
		},
		{
			name: "stateless DNS only",
			opts: []dhcpv6.Option{dns},
			want: &Lease6{Interface: "eth0", DNS: []netip.Addr{netip.MustParseAddr("fd00:77::53"), netip.MustParseAddr("fd00:77::54")}},
		},
		{
			name: "withdrawn address skipped for the next", stateful: true,
			opts: []dhcpv6.Option{iaNA(nil, iaAddr("fd00:77::1", 0), iaAddr("fd00:77::2", time.Minute))},
			want: &Lease6{Interface: "eth0", Stateful: true, Address: netip.MustParseAddr("fd00:77::2"),
				PreferredLifetime: 30 * time.Second, ValidLifetime: time.Minute, T1: 300 * time.Second, T2: 480 * time.Second},
		},
		{
			name: "link-local address reported, global kept", stateful: true,
			opts: []dhcpv6.Option{iaNA(nil, iaAddr("fe80::1", time.Hour), iaAddr("fd00:77::3", time.Hour))},
			want: &Lease6{Interface: "eth0", Stateful: true, Address: netip.MustParseAddr("fd00:77::3"),
				PreferredLifetime: 30 * time.Minute, ValidLifetime: time.Hour, T1: 300 * time.Second, T2: 480 * time.Second},
			wantErr: "IA_NA address fe80::1 is not a global IPv6 address",
		},
		{
			name: "no IA_NA", stateful: true,
			opts:    []dhcpv6.Option{dns},
			wantErr: "no IA_NA in the reply",
		},
		{
			name: "IA_NA NoAddrsAvail", stateful: true,
			opts:    []dhcpv6.Option{iaNA(&dhcpv6.OptStatusCode{StatusCode: iana.StatusNoAddrsAvail, StatusMessage: "pool empty"})},
			wantErr: `IA_NA status NoAddrsAvail: "pool empty"`,
		},
		{
			name:    "top-level failure status",
			opts:    []dhcpv6.Option{&dhcpv6.OptStatusCode{StatusCode: iana.StatusUnspecFail, StatusMessage: "no"}},
			wantErr: `server says UnspecFail: "no"`,
		},
		{
			name: "IA_NA without addresses", stateful: true,
			opts:    []dhcpv6.Option{iaNA(nil)},
			wantErr: "IA_NA carries no usable address",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := reply6(t, tt.opts...)
			if tt.modify != nil {
				tt.modify(m)
			}
			// Through the wire format, as the client sees it.
			got, err := ParseReply6("eth0", m.ToBytes(), tt.stateful)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(Lease6{}), cmpopts.IgnoreFields(Lease6{}, "Acquired"), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("lease (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseReply6(f *testing.F) {
	f.Add(reply6(f, iaNA(nil, iaAddr("fd00:77::150", time.Hour)), dhcpv6.OptDNS(net.ParseIP("fd00::53"))).ToBytes(), true)
	f.Add(reply6(f, iaNA(&dhcpv6.OptStatusCode{StatusCode: iana.StatusNoAddrsAvail})).ToBytes(), true)
	m := reply6(f, dhcpv6.OptDNS(net.ParseIP("fd00::53")))
	dhcpv6.WithDomainSearchList("example.com")(m)
	f.Add(m.ToBytes(), false)
	f.Add([]byte{7, 1, 2, 3}, false)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, data []byte, stateful bool) {
		lease, err := ParseReply6("eth0", data, stateful)
		if lease == nil {
			if err == nil {
				t.Fatal("no lease and no error")
			}
			return
		}
		if stateful && (!lease.Address.IsValid() || !lease.Address.Is6() || lease.Address.IsLinkLocalUnicast()) {
			t.Fatalf("stateful lease with address %v", lease.Address)
		}
		for _, s := range lease.Search {
			if s == "" || strings.ContainsAny(s, " \n#;") {
				t.Fatalf("search domain %q would break resolv.conf", s)
			}
		}
		_ = lease.ResolvConf()
	})
}

func TestSLAACAddresses(t *testing.T) {
	addr := func(cidr string, flags int) netlink.Addr {
		a, err := netlink.ParseAddr(cidr)
		if err != nil {
			t.Fatal(err)
		}
		a.Flags = flags
		return *a
	}
	tests := []struct {
		name  string
		addrs []netlink.Addr
		want  []netip.Prefix
	}{
		{"router-advertised", []netlink.Addr{addr("fe80::1/64", unix.IFA_F_PERMANENT), addr("fd00:77::5054:ff:fe00:1/64", unix.IFA_F_MANAGETEMPADDR)},
			[]netip.Prefix{netip.MustParsePrefix("fd00:77::5054:ff:fe00:1/64")}},
		{"still tentative", []netlink.Addr{addr("fd00:77::5054:ff:fe00:1/64", unix.IFA_F_TENTATIVE)}, nil},
		{"duplicate", []netlink.Addr{addr("fd00:77::5054:ff:fe00:1/64", unix.IFA_F_DADFAILED)}, nil},
		{"static address", []netlink.Addr{addr("fd00:77::9/64", unix.IFA_F_PERMANENT)}, nil},
		{"DHCPv6 lease", []netlink.Addr{addr("fd00:77::150/128", 0)}, nil},
		{"IPv4", []netlink.Addr{addr("192.0.2.1/24", 0)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slaacAddresses(tt.addrs)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("slaacAddresses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetAcceptRARejectsPaths(t *testing.T) {
	for _, name := range []string{"", ".", "..", "../../../../etc/x", "a/b"} {
		if err := SetAcceptRA(name, true); err == nil {
			t.Errorf("SetAcceptRA(%q) accepted", name)
		}
	}
}

// v6ServerLink makes a veth pair, the client end named client and "srv"
// with fd00:77::1/64 (without DAD, so dnsmasq can use it at once), both up.
func v6ServerLink(t *testing.T, client string) {
	t.Helper()
	nstest.Veth(t, client, "srv", "52:54:00:12:34:56")
	srv, err := netlink.LinkByName("srv")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := netlink.ParseAddr("fd00:77::1/64")
	addr.Flags = unix.IFA_F_NODAD
	if err := netlink.AddrAdd(srv, addr); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(srv); err != nil {
		t.Fatal(err)
	}
}

// startDnsmasq6 runs dnsmasq on srv with the given DHCPv6 arguments and
// router advertisements, and stops it when the test ends.
func startDnsmasq6(t *testing.T, args ...string) {
	t.Helper()
	if _, err := os.Stat("/proc/sys/net/ipv6"); err != nil {
		testenv.Skip(t, "this kernel has no IPv6")
	}
	nstest.Dnsmasq(t, t.TempDir(), append([]string{"--interface=srv", "--bind-interfaces", "--enable-ra"}, args...)...)
}

// TestAcquire6Dnsmasq gets a stateful DHCPv6 lease from dnsmasq in a
// namespace of its own, applies it and checks the /128 with netlink.
func TestAcquire6Dnsmasq(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	v6ServerLink(t, "eth0")
	startDnsmasq6(t, "--dhcp-range=fd00:77::100,fd00:77::1ff,64",
		"--dhcp-option=option6:dns-server,[fd00:77::53]",
		"--dhcp-option=option6:domain-search,example.com,corp.example")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var lease *Lease6
	var err error
	for attempt := 0; attempt < 3 && lease == nil; attempt++ {
		// dnsmasq may not be listening yet on the first try.
		lease, err = Acquire6(ctx, "eth0", Options{Timeout: 2 * time.Second, Retries: 2})
	}
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := netip.MustParseAddr("fd00:77::100"), netip.MustParseAddr("fd00:77::1ff")
	if lease.Address.Less(lo) || hi.Less(lease.Address) {
		t.Errorf("address %v outside the range %v-%v", lease.Address, lo, hi)
	}
	if lease.ValidLifetime <= 0 {
		t.Errorf("valid lifetime %v", lease.ValidLifetime)
	}
	if err := lease.Apply(); err != nil {
		t.Fatal(err)
	}
	if err := lease.Apply(); err != nil {
		t.Fatalf("applying the lease again: %v", err)
	}
	if diff := cmp.Diff([]string{lease.Address.String() + "/128"}, nstest.Addrs(t, "eth0", netlink.FAMILY_V6)); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	wantResolv := "# Generated by seedinit from the DHCPv6 reply on eth0\nnameserver fd00:77::53\nsearch example.com corp.example\n"
	if diff := cmp.Diff(wantResolv, string(lease.ResolvConf())); diff != "" {
		t.Errorf("resolv.conf (-want +got):\n%s", diff)
	}
	if err := lease.Remove(); err != nil {
		t.Fatal(err)
	}
	if got := nstest.Addrs(t, "eth0", netlink.FAMILY_V6); len(got) != 0 {
		t.Errorf("addresses after Remove = %v", got)
	}

	// Asked again in another second, the server sees the same client (a
	// DUID-LLT would carry the new second) and gives the same address.
	time.Sleep(1100 * time.Millisecond)
	again, err := Acquire6(ctx, "eth0", Options{Timeout: 2 * time.Second, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if again.Address != lease.Address {
		t.Errorf("second lease %v, want the first's %v", again.Address, lease.Address)
	}
	id := again.reply.Options.ClientID()
	if ll, ok := id.(*dhcpv6.DUIDLL); !ok || ll.LinkLayerAddr.String() != "52:54:00:12:34:56" {
		t.Errorf("client DUID %v, want DUID-LL of eth0's MAC", id)
	}
}

// TestSLAACAndInform6Dnsmasq waits for an address from dnsmasq's router
// advertisements (stateless range) and asks DHCPv6 for DNS only.
func TestSLAACAndInform6Dnsmasq(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	nstest.Veth(t, "eth0", "srv", "52:54:00:12:34:57")
	if err := SetAcceptRA("eth0", true); err != nil {
		t.Fatal(err)
	}
	srv, _ := netlink.LinkByName("srv")
	addr, _ := netlink.ParseAddr("fd00:77::1/64")
	addr.Flags = unix.IFA_F_NODAD
	if err := netlink.AddrAdd(srv, addr); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(srv); err != nil {
		t.Fatal(err)
	}
	startDnsmasq6(t, "--dhcp-range=fd00:77::,ra-stateless,64", "--ra-param=srv,3",
		"--dhcp-option=option6:dns-server,[fd00:77::53]")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if l, _ := netlink.LinkByName("eth0"); l != nil {
		netlink.LinkSetUp(l)
	}
	got, err := WaitSLAAC(ctx, "eth0", 25*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The EUI-64 interface identifier from the MAC 52:54:00:12:34:57.
	want := []netip.Prefix{netip.MustParsePrefix("fd00:77::5054:ff:fe12:3457/64")}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("SLAAC addresses (-want +got):\n%s", diff)
	}
	var lease *Lease6
	for attempt := 0; attempt < 3 && lease == nil; attempt++ {
		lease, err = Inform6(ctx, "eth0", Options{Timeout: 2 * time.Second, Retries: 2})
	}
	if err != nil {
		t.Fatal(err)
	}
	if lease.Address.IsValid() {
		t.Errorf("stateless lease has address %v", lease.Address)
	}
	if diff := cmp.Diff([]netip.Addr{netip.MustParseAddr("fd00:77::53")}, lease.DNS, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("DNS (-want +got):\n%s", diff)
	}
}

// TestWaitSLAACTimesOut checks the wait is bounded on a link no router
// talks to.
func TestWaitSLAACTimesOut(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	nstest.Veth(t, "eth0", "deadend", "52:54:00:00:00:98")
	l, _ := netlink.LinkByName("eth0")
	netlink.LinkSetUp(l)
	start := time.Now()
	_, err := WaitSLAAC(context.Background(), "eth0", time.Second)
	if err == nil {
		t.Fatal("WaitSLAAC found an address with no router")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("WaitSLAAC took %v with a 1s bound", d)
	}
}
