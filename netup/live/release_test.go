package live

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/internal/nstest"
	"github.com/seedinit/seedinit/netup"
	"github.com/seedinit/seedinit/netup/model"
)

// What Apply configured is taken back from the interfaces handed to the
// OS, and only from those: addresses, routes and the bridge go, the
// rename stays, an interface kept live keeps everything.
func TestReleaseNamespace(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	nstest.Veth(t, "ens3", "peer0", "52:54:00:00:00:0a")
	nstest.Veth(t, "ens4", "peer1", "52:54:00:00:00:0b")
	n, err := netup.Parse([]byte(v2Config), netup.KindYAML, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(context.Background(), n, Options{}); err != nil {
		t.Fatal(err)
	}
	nstest.Veth(t, "keep0", "peer2", "52:54:00:00:00:0c")
	keep, _ := netlink.LinkByName("keep0")
	a, _ := netlink.ParseAddr("198.18.0.2/24")
	if err := netlink.AddrAdd(keep, a); err != nil {
		t.Fatal(err)
	}
	kept := &model.Interface{Name: "keep0", Type: model.TypePhysical}
	n.Interfaces = append(n.Interfaces, kept)

	released, err := Release(n, func(i *model.Interface) bool { return i != kept })
	if err != nil {
		t.Fatalf("Release: %v", err)
	}
	slices.Sort(released)
	if diff := cmp.Diff([]string{"br0", "eth0", "eth1"}, released); diff != "" {
		t.Errorf("released (-want +got):\n%s", diff)
	}
	for _, name := range []string{"eth0", "eth1"} {
		addrs, routes, _, master := linkState(t, name)
		if len(addrs) != 0 || len(routes) != 0 || master != "" {
			t.Errorf("%s after Release: addresses %v, routes %v, master %q; want none", name, addrs, routes, master)
		}
	}
	if _, err := netlink.LinkByName("br0"); err == nil {
		t.Error("the bridge Apply made is still there")
	}
	if addrs, _, _, _ := linkState(t, "keep0"); !cmp.Equal(addrs, []string{"198.18.0.2/24"}) {
		t.Errorf("the interface kept live lost its address: %v", addrs)
	}
}
