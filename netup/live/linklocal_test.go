package live

import (
	"net"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/internal/nstest"
)

func TestLinkLocalFor(t *testing.T) {
	for mac, want := range map[string]string{
		"52:54:00:12:34:56": "169.254.53.86/16",
		"52:54:00:12:00:00": "169.254.1.0/16",
		"52:54:00:12:fd:ff": "169.254.254.255/16",
		"52:54:00:12:a8:fe": "169.254.169.253/16", // never the metadata address
	} {
		hw, _ := net.ParseMAC(mac)
		if got := linkLocalFor(hw).String(); got != want {
			t.Errorf("%s: %s, want %s", mac, got, want)
		}
	}
}

// The first Ethernet NIC gets its link-local address, reaches an
// address of 169.254.0.0/16 on the link, and loses the address again.
func TestUpLinkLocalNamespace(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	nstest.Veth(t, "eth0", "peer", "06:00:ac:10:00:02")
	ll, err := UpLinkLocal(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ll.Interface != "eth0" && ll.Interface != "peer" {
		t.Fatalf("address on %s", ll.Interface)
	}
	if got := nstest.Addrs(t, ll.Interface, netlink.FAMILY_V4); len(got) != 1 || got[0] != ll.Address.String() {
		t.Errorf("addresses of %s: %v, want %s", ll.Interface, got, ll.Address)
	}
	if err := ll.Remove(); err != nil {
		t.Fatal(err)
	}
	if got := nstest.Addrs(t, ll.Interface, netlink.FAMILY_V4); len(got) != 0 {
		t.Errorf("addresses of %s after Remove: %v", ll.Interface, got)
	}
}
