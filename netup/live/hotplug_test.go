package live

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/server4"
	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/internal/nstest"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/model"
)

// TestHotplugIntoKeeper: two NICs of the config come after the boot, with
// kernel names; each is renamed by its MAC and configured (one static, one
// by DHCP), and the DHCP lease goes to the lease keeper, which renews it,
// as `seedinit dhcp keep --network` wires them.
func TestHotplugIntoKeeper(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	n := &model.Network{Version: 1, Interfaces: []*model.Interface{
		{Name: "mgmt0", Type: model.TypePhysical, MACAddress: "52:54:00:00:01:01",
			Subnets: []model.Subnet{{Type: model.SubnetStatic, Address: "198.51.100.10/24"}}},
		{Name: "lan0", Type: model.TypePhysical, MACAddress: "52:54:00:00:01:02",
			Subnets: []model.Subnet{{Type: model.SubnetDHCP}}},
	}, Routes: []model.Route{{Network: "203.0.113.0", Prefix: 24, Gateway: "198.51.100.1"}}}
	missing, err := Missing(n)
	if err != nil || len(missing) != 2 {
		t.Fatalf("missing = %v, %v; want both NICs", missing, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	more := make(chan dhcp.KeepMore, 2)
	hotplugDone := make(chan error, 1)
	var applyErrs atomic.Int32
	configured := make(chan string, 2)
	go func() {
		defer close(more)
		log := slog.New(slog.NewTextHandler(os.Stderr, nil)) // in the test's output
		hotplugDone <- Hotplug(ctx, n, Options{Log: log, DHCP: dhcp.Options{Timeout: time.Second}}, func(iface *model.Interface, res *Result, err error) {
			defer func() { configured <- iface.Name }()
			if err != nil {
				t.Logf("apply: %v", err)
				applyErrs.Add(1)
			}
			if res != nil {
				if st := dhcp.NewKeepState(res.Leases, res.Leases6); len(st.Leases) > 0 {
					more <- dhcp.KeepMore{State: st}
				}
			}
		})
	}()
	state := filepath.Join(t.TempDir(), "state.json")
	keepCtx, stopKeeper := context.WithCancel(context.Background())
	keeperDone := make(chan error, 1)
	go func() {
		keeperDone <- dhcp.Keep(keepCtx, &dhcp.KeepState{}, dhcp.KeepOptions{StateFile: state, More: more,
			ProcDir: t.TempDir(), DHCP: dhcp.Options{Timeout: time.Second, Retries: 1}})
	}()
	defer func() { stopKeeper(); <-keeperDone }()

	// The static NIC comes first, named as the kernel names them.
	addVeth(t, "eth7", "peer7", "52:54:00:00:01:01")
	waitLink(t, "mgmt0", "198.51.100.10/24")
	// The address comes before the routes: look once the NIC is done.
	select {
	case name := <-configured:
		if name != "mgmt0" {
			t.Fatalf("%s configured first, want mgmt0", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mgmt0 has its address but was never reported configured")
	}
	if routes := nstest.Routes(t, "mgmt0", netlink.FAMILY_V4); !slices.Contains(routes, "203.0.113.0/24 via 198.51.100.1") {
		t.Errorf("mgmt0 routes = %v, want the config's route through its gateway", routes)
	}

	// The DHCP one, with a server on its peer that leases for 4 s (T1 1 s).
	var requests atomic.Int32
	handler := func(conn net.PacketConn, peer net.Addr, m *dhcpv4.DHCPv4) {
		mt := dhcpv4.MessageTypeOffer
		if m.MessageType() == dhcpv4.MessageTypeRequest {
			mt = dhcpv4.MessageTypeAck
			requests.Add(1)
		}
		reply, err := dhcpv4.NewReplyFromRequest(m, dhcpv4.WithMessageType(mt),
			dhcpv4.WithYourIP(net.IPv4(192, 0, 2, 88)),
			dhcpv4.WithOption(dhcpv4.OptServerIdentifier(net.IPv4(192, 0, 2, 1))),
			dhcpv4.WithNetmask(net.CIDRMask(24, 32)),
			dhcpv4.WithLeaseTime(4), dhcpv4.WithOption(dhcpv4.OptRenewTimeValue(time.Second)))
		if err == nil {
			conn.WriteTo(reply.ToBytes(), &net.UDPAddr{IP: net.IPv4bcast, Port: dhcpv4.ClientPort})
		}
	}
	addVeth(t, "eth8", "srv", "52:54:00:00:01:02")
	srv, _ := netlink.LinkByName("srv")
	a, _ := netlink.ParseAddr("192.0.2.1/24")
	if err := netlink.AddrAdd(srv, a); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(srv); err != nil {
		t.Fatal(err)
	}
	server, err := server4.NewServer("srv", &net.UDPAddr{IP: net.IPv4zero, Port: dhcpv4.ServerPort}, handler)
	if err != nil {
		t.Fatal(err)
	}
	go server.Serve()
	defer server.Close()
	waitLink(t, "lan0", "192.0.2.88/24")
	select {
	case err := <-hotplugDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Hotplug did not end once both NICs came")
	}
	if applyErrs.Load() != 0 {
		t.Errorf("%d NICs configured with errors", applyErrs.Load())
	}
	// Past the 4 s lease, renewed by the keeper and still there. (The
	// unicast renewals cannot reach a server in the same namespace; the
	// rebinding broadcasts do. netup/dhcp's tests put dnsmasq apart.)
	time.Sleep(6 * time.Second)
	if requests.Load() < 2 {
		t.Errorf("the server saw %d requests, want the first and a renewal", requests.Load())
	}
	if diff := cmp.Diff([]string{"192.0.2.88/24"}, nstest.Addrs(t, "lan0", netlink.FAMILY_V4)); diff != "" {
		t.Errorf("lan0 after its lease's end (-want +got):\n%s", diff)
	}
}

// addVeth adds a veth pair as nstest.Veth does, without looking the new
// link up by a name the watcher may already have changed.
func addVeth(t *testing.T, name, peer, mac string) {
	t.Helper()
	hw, _ := net.ParseMAC(mac)
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, HardwareAddr: hw}, PeerName: peer}); err != nil {
		t.Fatalf("add veth %s/%s: %v", name, peer, err)
	}
}

// waitLink waits until the link exists with the address.
func waitLink(t *testing.T, name, addr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := netlink.LinkByName(name); err == nil && slices.Contains(nstest.Addrs(t, name, netlink.FAMILY_V4), addr) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never came with %s", name, addr)
}
