package server

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/seedinit/seedinit/serve/inventory"
)

// The server's own DHCP answers the inventory's MACs only, and the lease
// it acks finds the instance by address at once: DISCOVER, OFFER,
// REQUEST, ACK over UDP on loopback (the client asks from an address, so
// the reply comes back to it), then the NoCloud layout asked from the
// leased address serves that instance.
func TestDHCP(t *testing.T) {
	first, last, prefix, err := ParseDHCPRange("127.0.0.20-127.0.0.30/8")
	if err != nil {
		t.Fatal(err)
	}
	var f *fixture
	d := NewDHCP(DHCPConfig{First: first, Last: last, Prefix: prefix, ServerIP: mustAddr("127.0.0.1"), LeaseTime: time.Minute},
		func() *inventory.Inventory { return f.srv.Inventory() }, testLog(t), nil)
	f = start(t, Config{LeaseSources: []LeaseSource{d}})
	srvConn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go d.Serve(srvConn)
	t.Cleanup(func() { srvConn.Close() })
	client, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	exchange := func(m *dhcpv4.DHCPv4) *dhcpv4.DHCPv4 {
		t.Helper()
		if _, err := client.WriteTo(m.ToBytes(), srvConn.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		client.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 1500)
		n, _, err := client.ReadFrom(buf)
		if err != nil {
			return nil
		}
		reply, err := dhcpv4.FromBytes(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
	hw, _ := net.ParseMAC(mac2)
	discover, _ := dhcpv4.NewDiscovery(hw)
	offer := exchange(discover)
	if offer == nil || offer.MessageType() != dhcpv4.MessageTypeOffer || !offer.YourIPAddr.Equal(net.ParseIP("127.0.0.20")) {
		t.Fatalf("offer: %v", offer)
	}
	request, _ := dhcpv4.NewRequestFromOffer(offer)
	ack := exchange(request)
	if ack == nil || ack.MessageType() != dhcpv4.MessageTypeAck || !ack.YourIPAddr.Equal(net.ParseIP("127.0.0.20")) || ack.HostName() != "waf-002" {
		t.Fatalf("ack: %v", ack)
	}
	if code, body := get(t, clientFrom("127.0.0.20"), f.url+"/nocloud/meta-data", nil); code != 200 || !strings.Contains(body, "waf-002") {
		t.Errorf("NoCloud from the leased address: %d %q", code, body)
	}
	// Another instance gets the next address; asking for waf-002's is
	// refused.
	hw1, _ := net.ParseMAC(mac1)
	discover, _ = dhcpv4.NewDiscovery(hw1)
	if offer := exchange(discover); offer == nil || !offer.YourIPAddr.Equal(net.ParseIP("127.0.0.21")) {
		t.Errorf("waf-001's offer: %v", offer)
	}
	steal, _ := dhcpv4.NewRequestFromOffer(offer)
	steal.ClientHWAddr = hw1
	if nak := exchange(steal); nak == nil || nak.MessageType() != dhcpv4.MessageTypeNak {
		t.Errorf("waf-001 asking for waf-002's address: %v", nak)
	}
	// A MAC the inventory does not have gets nothing.
	stranger, _ := net.ParseMAC("02:00:00:00:00:99")
	discover, _ = dhcpv4.NewDiscovery(stranger)
	if offer := exchange(discover); offer != nil {
		t.Errorf("a stranger got an offer: %v", offer)
	}
	if mac, ok := d.MAC(netip.MustParseAddr("127.0.0.20")); !ok || mac != mac2 {
		t.Errorf("lease of 127.0.0.20: %q %v", mac, ok)
	}

	// After a restart (a new server, no memory), waf-002 asking again
	// for its address (INIT-REBOOT) keeps it.
	d2 := NewDHCP(d.cfg, d.inv, testLog(t), nil)
	srv2, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go d2.Serve(srv2)
	t.Cleanup(func() { srv2.Close() })
	d, srvConn = d2, srv2
	reboot, _ := dhcpv4.New(dhcpv4.WithHwAddr(hw), dhcpv4.WithMessageType(dhcpv4.MessageTypeRequest),
		dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(net.ParseIP("127.0.0.29"))))
	if ack := exchange(reboot); ack == nil || ack.MessageType() != dhcpv4.MessageTypeAck || !ack.YourIPAddr.Equal(net.ParseIP("127.0.0.29")) {
		t.Errorf("INIT-REBOOT for a free address after a restart: %v", ack)
	}
}

func TestParseDHCPRange(t *testing.T) {
	for _, bad := range []string{"10.0.0.10-10.0.0.5/24", "10.0.0.10-10.0.1.5/24", "10.0.0.10/24", "fd00::1-fd00::9/64", "10.0.0.1-10.0.0.9/31", "x-y/24"} {
		if _, _, _, err := ParseDHCPRange(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
