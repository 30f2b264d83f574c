package live

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/internal/nstest"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/model"
)

// subscriptionsLeft counts the netlink library's goroutines that deliver
// link events.
func subscriptionsLeft() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "netlink.linkSubscribeAt")
}

// addLinks makes n veth pairs, a burst of link events.
func addLinks(t *testing.T, prefix string, n int) {
	t.Helper()
	for i := range n {
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: fmt.Sprintf("%sa%d", prefix, i)}, PeerName: fmt.Sprintf("%sb%d", prefix, i)}); err != nil {
			t.Fatalf("add veth %d: %v", i, err)
		}
	}
}

// The netlink library's goroutine sends each link event on the channel
// Hotplug gave it: once Hotplug had returned (its last NIC configured),
// nobody read it, and with events past the channel's room the goroutine
// (and its socket) blocked for good. Everything Hotplug starts must end
// once it returns.
func TestHotplugLeavesNoSubscriptionBehind(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	before := subscriptionsLeft()
	n := &model.Network{Version: 1, Interfaces: []*model.Interface{
		{Name: "last0", Type: model.TypePhysical, MACAddress: "52:54:00:00:09:98", Subnets: []model.Subnet{{Type: model.SubnetDHCP}}},
	}}
	done := make(chan error, 1)
	opts := Options{DHCP: dhcp.Options{Timeout: time.Second, Retries: 1}}
	go func() { done <- Hotplug(context.Background(), n, opts, func(*model.Interface, *Result, error) {}) }()
	// The NIC Hotplug waits for, then, while its DHCP waits for a server
	// that is not there, a burst of events nobody will read.
	addVeth(t, "eth9", "peer9", "52:54:00:00:09:98")
	addLinks(t, "x", 40)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for subscriptionsLeft() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d netlink subscription goroutine(s) still there 30 s after Hotplug returned", subscriptionsLeft()-before)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A burst of link events while a NIC is being configured (its DHCP
// waiting for a server) overflowed the netlink socket: ENOBUFS ended the
// wait, and a NIC that came after was never configured. The watch must
// go on, and find what came while it could not listen.
func TestHotplugOutlivesAnEventBurst(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	n := &model.Network{Version: 1, Interfaces: []*model.Interface{
		{Name: "slow0", Type: model.TypePhysical, MACAddress: "52:54:00:00:09:01", Subnets: []model.Subnet{{Type: model.SubnetDHCP}}},
		{Name: "late0", Type: model.TypePhysical, MACAddress: "52:54:00:00:09:02",
			Subnets: []model.Subnet{{Type: model.SubnetStatic, Address: "198.51.100.20/24"}}},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A socket with little room, so that the burst overflows it.
	linkEventBuffer = 4096
	configuring := make(chan string, 4)
	done := make(chan error, 1)
	var logged lockedLog
	opts := Options{Log: slog.New(slog.NewTextHandler(&logged, nil)), DHCP: dhcp.Options{Timeout: 2 * time.Second, Retries: 2}}
	go func() {
		done <- Hotplug(ctx, n, opts, func(iface *model.Interface, res *Result, err error) {
			configuring <- iface.Name
		})
	}()
	hw, _ := net.ParseMAC("52:54:00:00:09:01")
	// No DHCP server: slow0's exchange waits its whole timeout, while
	// the burst comes.
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth1", HardwareAddr: hw}, PeerName: "peer1"}); err != nil {
		t.Fatal(err)
	}
	addLinks(t, "b", 300)
	addVeth(t, "eth2", "peer2", "52:54:00:00:09:02")
	waitLink(t, "late0", "198.51.100.20/24")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Hotplug: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Hotplug did not end once both NICs came")
	}
	if !strings.Contains(logged.String(), "watching for new NICs again") {
		t.Errorf("the burst did not overflow the socket (nothing was tested):\n%s", logged.String())
	}
}

type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
