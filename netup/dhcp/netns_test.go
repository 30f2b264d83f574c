package dhcp

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/server4"
	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/internal/nstest"
)

// serverLink makes a veth pair: "srv" with 192.0.2.1/24 for the server,
// and the client ends given, all up.
func serverLink(t *testing.T, client string) {
	t.Helper()
	nstest.Veth(t, client, "srv", "52:54:00:12:34:56")
	srv, err := netlink.LinkByName("srv")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := netlink.ParseAddr("192.0.2.1/24")
	if err := netlink.AddrAdd(srv, addr); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(srv); err != nil {
		t.Fatal(err)
	}
}

// TestAcquireInProcessServer runs nclient4 against server4 over a veth
// pair in a namespace of its own.
func TestAcquireInProcessServer(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	serverLink(t, "eth0")
	handler := func(conn net.PacketConn, peer net.Addr, m *dhcpv4.DHCPv4) {
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
			dhcpv4.WithMessageType(mt),
			dhcpv4.WithYourIP(net.IPv4(192, 0, 2, 50)),
			dhcpv4.WithServerIP(net.IPv4(192, 0, 2, 1)),
			dhcpv4.WithOption(dhcpv4.OptServerIdentifier(net.IPv4(192, 0, 2, 1))),
			dhcpv4.WithNetmask(net.CIDRMask(24, 32)),
			dhcpv4.WithRouter(net.IPv4(192, 0, 2, 1)),
			dhcpv4.WithOption(metadataRoutes()),
			dhcpv4.WithDNS(net.IPv4(192, 0, 2, 53)),
			dhcpv4.WithGeneric(dhcpv4.OptionInterfaceMTU, []byte{0x05, 0x78}),
			dhcpv4.WithLeaseTime(600),
		)
		if err != nil {
			t.Errorf("build reply: %v", err)
			return
		}
		if _, err := conn.WriteTo(reply.ToBytes(), &net.UDPAddr{IP: net.IPv4bcast, Port: dhcpv4.ClientPort}); err != nil {
			t.Errorf("send reply: %v", err)
		}
	}
	server, err := server4.NewServer("srv", &net.UDPAddr{IP: net.IPv4zero, Port: dhcpv4.ServerPort}, handler)
	if err != nil {
		t.Fatal(err)
	}
	go server.Serve()
	defer server.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lease, err := AcquireAny(ctx, []string{"eth0"}, Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Apply(); err != nil {
		t.Fatal(err)
	}
	if err := lease.Apply(); err != nil {
		t.Fatalf("applying the lease again: %v", err)
	}
	if diff := cmp.Diff([]string{"192.0.2.50/24"}, nstest.Addrs(t, "eth0", netlink.FAMILY_V4)); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	// 192.0.2.2 is inside the subnet: no host route needed for it.
	wantRoutes := []string{"0.0.0.0/0 via 192.0.2.1", "169.254.169.254/32 via 192.0.2.2", "192.0.2.0/24"}
	if diff := cmp.Diff(wantRoutes, nstest.Routes(t, "eth0", netlink.FAMILY_V4)); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
	if link, _ := netlink.LinkByName("eth0"); link.Attrs().MTU != 1400 {
		t.Errorf("MTU = %d, want 1400", link.Attrs().MTU)
	}
	// A static address the instance's config puts beside the lease, in
	// the same subnet: the kernel deletes it with the lease's (the
	// subnet's primary) unless Remove has it promoted.
	link, err := netlink.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.AddrAdd(link, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(192, 0, 2, 77), Mask: net.CIDRMask(24, 32)}}); err != nil {
		t.Fatal(err)
	}
	if err := lease.Remove(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"192.0.2.77/24"}, nstest.Addrs(t, "eth0", netlink.FAMILY_V4)); diff != "" {
		t.Errorf("addresses after Remove (-want +got):\n%s", diff)
	}
}

// TestAcquireDnsmasq gets a lease from dnsmasq with option 121, MTU, DNS
// and a search list, in a namespace of its own, on two candidate NICs of
// which only one has a server.
func TestAcquireDnsmasq(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	serverLink(t, "eth0")
	nstest.Veth(t, "eth1", "deadend", "52:54:00:00:00:99")
	nstest.Dnsmasq(t, t.TempDir(), "--interface=srv", "--bind-interfaces",
		"--dhcp-range=192.0.2.100,192.0.2.100,255.255.255.0,1h",
		"--dhcp-option=121,169.254.169.254/32,192.0.2.1,198.51.100.0/24,192.0.2.254,0.0.0.0/0,192.0.2.1",
		"--dhcp-option=3,192.0.2.9",
		"--dhcp-option=26,1450",
		"--dhcp-option=6,192.0.2.53,192.0.2.54",
		"--dhcp-option=119,example.com,corp.example",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lease *Lease
	var err error
	for attempt := 0; attempt < 3 && lease == nil; attempt++ {
		// dnsmasq may not be listening yet on the first try.
		lease, err = AcquireAny(ctx, []string{"eth1", "eth0"}, Options{Timeout: 2 * time.Second, Retries: 2})
	}
	if err != nil {
		t.Fatal(err)
	}
	if lease.Interface != "eth0" {
		t.Errorf("lease on %s, want eth0", lease.Interface)
	}
	if err := lease.Apply(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"192.0.2.100/24"}, nstest.Addrs(t, "eth0", netlink.FAMILY_V4)); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	// Option 121 is there, so option 3's 192.0.2.9 is ignored (RFC 3442).
	wantRoutes := []string{"0.0.0.0/0 via 192.0.2.1", "169.254.169.254/32 via 192.0.2.1", "192.0.2.0/24", "198.51.100.0/24 via 192.0.2.254"}
	if diff := cmp.Diff(wantRoutes, nstest.Routes(t, "eth0", netlink.FAMILY_V4)); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
	if link, _ := netlink.LinkByName("eth0"); link.Attrs().MTU != 1450 {
		t.Errorf("MTU = %d, want 1450", link.Attrs().MTU)
	}
	wantResolv := "# Generated by seedinit from the DHCP lease on eth0\nnameserver 192.0.2.53\nnameserver 192.0.2.54\nsearch example.com corp.example\n"
	if diff := cmp.Diff(wantResolv, string(lease.ResolvConf())); diff != "" {
		t.Errorf("resolv.conf (-want +got):\n%s", diff)
	}
	if !slices.Contains(lease.Routers, mustAddr("192.0.2.9")) {
		t.Errorf("routers = %v, want 192.0.2.9 recorded", lease.Routers)
	}
	// Broadcast (rebinding): with dnsmasq in this namespace a unicast
	// renewal would go over loopback; TestKeepDnsmasq puts it apart.
	renewed, err := lease4{lease}.renew(ctx, Options{Timeout: 2 * time.Second}, true)
	if err != nil {
		t.Fatalf("renew: %v", err)
	}
	if renewed.address() != lease.Address.String() {
		t.Errorf("renewed address %v, want %v", renewed.address(), lease.Address)
	}
}
