package link

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/internal/nstest"
	"github.com/seedinit/seedinit/netup/model"
)

// fakeOps is a set of links in memory; failOn makes one rename fail.
type fakeOps struct {
	links  map[string]*device
	failOn string
	log    []string
}

func newFake(devs ...device) *fakeOps {
	f := &fakeOps{links: map[string]*device{}}
	for _, d := range devs {
		d := d
		d.renameable = true
		f.links[d.name] = &d
	}
	return f
}

func (f *fakeOps) list() ([]*device, error) {
	var out []*device
	for _, d := range f.links {
		c := *d
		out = append(out, &c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

func (f *fakeOps) setUp(name string) error   { return f.setState(name, true) }
func (f *fakeOps) setDown(name string) error { return f.setState(name, false) }

func (f *fakeOps) setState(name string, up bool) error {
	d := f.links[name]
	if d == nil {
		return errors.New("no such device")
	}
	d.up = up
	return nil
}

func (f *fakeOps) setName(from, to string) error {
	f.log = append(f.log, from+">"+to)
	d := f.links[from]
	if d == nil {
		return errors.New("no such device")
	}
	if d.up {
		return errors.New("device or resource busy")
	}
	if f.links[to] != nil {
		return errors.New("file exists")
	}
	if to == f.failOn {
		return errors.New("injected failure")
	}
	delete(f.links, from)
	d.name = to
	f.links[to] = d
	return nil
}

// state is "name=mac[+up]" per link, sorted.
func (f *fakeOps) state() []string {
	var out []string
	for _, d := range f.links {
		s := d.name + "=" + d.mac
		if d.up {
			s += "+up"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

const (
	macA = "52:54:00:00:00:0a"
	macB = "52:54:00:00:00:0b"
	macC = "52:54:00:00:00:0c"
)

func TestRenamePlan(t *testing.T) {
	tests := []struct {
		name      string
		links     []device
		rules     []Rule
		failOn    string
		want      []string
		wantErrs  []string
		wantMoves int
	}{
		{
			name:  "plain rename keeps the link up",
			links: []device{{name: "ens3", mac: macA, up: true}},
			rules: []Rule{{MAC: strings.ToUpper(macA), Name: "eth0"}},
			want:  []string{"eth0=" + macA + "+up"},
		},
		{
			name:  "swap",
			links: []device{{name: "eth0", mac: macA}, {name: "eth1", mac: macB, up: true}},
			rules: []Rule{{MAC: macA, Name: "eth1"}, {MAC: macB, Name: "eth0"}},
			want:  []string{"eth0=" + macB + "+up", "eth1=" + macA},
		},
		{
			name:  "three-way rotation",
			links: []device{{name: "eth0", mac: macA}, {name: "eth1", mac: macB}, {name: "eth2", mac: macC}},
			rules: []Rule{{MAC: macA, Name: "eth1"}, {MAC: macB, Name: "eth2"}, {MAC: macC, Name: "eth0"}},
			want:  []string{"eth0=" + macC, "eth1=" + macA, "eth2=" + macB},
		},
		{
			name:  "name held by a NIC without a rule moves aside",
			links: []device{{name: "eth0", mac: macA, up: true}, {name: "ens4", mac: macB}},
			rules: []Rule{{MAC: macB, Name: "eth0"}},
			want:  []string{"cirename0=" + macA + "+up", "eth0=" + macB},
		},
		{
			name:     "two rules want one name",
			links:    []device{{name: "ens3", mac: macA}, {name: "ens4", mac: macB}},
			rules:    []Rule{{MAC: macA, Name: "eth0"}, {MAC: macB, Name: "eth0"}},
			want:     []string{"ens4=" + macB, "eth0=" + macA},
			wantErrs: []string{"rename rule 1 (" + macB + ` to "eth0"): name already given to ` + macA + " by an earlier rule"},
		},
		{
			name:  "missing MAC and bad name are reported, others done",
			links: []device{{name: "ens3", mac: macA}},
			rules: []Rule{{MAC: macC, Name: "eth9"}, {MAC: macA, Name: "a/b"}, {MAC: macA, Name: "eth0"}},
			want:  []string{"eth0=" + macA},
			wantErrs: []string{
				"rename rule 0 (" + macC + ` to "eth9"): no such network device`,
				"rename rule 1 (" + macA + ` to "a/b"): interface name contains '/', ':' or white space`,
			},
		},
		{
			name:   "a failing rename rolls everything back",
			links:  []device{{name: "eth0", mac: macA, up: true}, {name: "eth1", mac: macB, up: true}, {name: "ens5", mac: macC}},
			rules:  []Rule{{MAC: macA, Name: "eth1"}, {MAC: macB, Name: "eth0"}, {MAC: macC, Name: "eth2"}},
			failOn: "eth2",
			want:   []string{"ens5=" + macC, "eth0=" + macA + "+up", "eth1=" + macB + "+up"},
			wantErrs: []string{
				"rename network devices: rename ens5 to eth2: injected failure",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(tt.links...)
			f.failOn = tt.failOn
			_, err := rename(f, tt.rules)
			if diff := cmp.Diff(tt.want, f.state()); diff != "" {
				t.Errorf("links after rename (-want +got):\n%s\nops: %v", diff, f.log)
			}
			var gotErrs []string
			if err != nil {
				gotErrs = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.wantErrs, gotErrs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRulesFromNetwork(t *testing.T) {
	n := &model.Network{Interfaces: []*model.Interface{
		{Name: "eth0", Type: model.TypePhysical, MACAddress: macA},
		{Name: "eth1", Type: model.TypePhysical},
		{Name: "bond0", Type: model.TypeBond, MACAddress: macB},
		{Name: "mgmt", Type: model.TypePhysical, MACAddress: macC, Driver: "virtio_net"},
	}}
	want := []Rule{{MAC: macA, Name: "eth0"}, {MAC: macC, Name: "mgmt", Driver: "virtio_net"}}
	if diff := cmp.Diff(want, RulesFromNetwork(n)); diff != "" {
		t.Errorf("RulesFromNetwork (-want +got):\n%s", diff)
	}
}

func TestDiscoverFakeSys(t *testing.T) {
	sys := t.TempDir()
	dir := filepath.Join(sys, "class/net")
	write := func(path, data string) {
		t.Helper()
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lo/address", "00:00:00:00:00:00\n")
	write("lo/type", "772\n")
	write("eth0/address", "52:54:00:AA:BB:CC\n")
	write("eth0/type", "1\n")
	write("eth0/carrier", "1\n")
	write("eth0/flags", "0x1003\n")
	write("bonding_masters", "bond0\n")
	for _, d := range []string{"devices/virtio0", "bus/virtio/drivers/virtio_net"} {
		if err := os.MkdirAll(filepath.Join(sys, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../../../devices/virtio0", filepath.Join(dir, "eth0/device")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../bus/virtio/drivers/virtio_net", filepath.Join(sys, "devices/virtio0/driver")); err != nil {
		t.Fatal(err)
	}
	write("bond0/address", "52:54:00:aa:bb:cc\n")
	write("bond0/type", "1\n")
	write("bond0/flags", "0x1002\n")
	write("bond0/bonding/mode", "active-backup 1\n")

	got, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []NIC{
		{Name: "bond0", MAC: "52:54:00:aa:bb:cc", Bond: true, Type: 1},
		{Name: "eth0", MAC: "52:54:00:aa:bb:cc", Driver: "virtio_net", Carrier: true, Up: true, Physical: true, Type: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Discover (-want +got):\n%s", diff)
	}
}

// TestRenameNamespace renames dummy links in a namespace of its own:
// a swap, a name held by a NIC without a rule, and a collision.
func TestRenameNamespace(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	nstest.Veth(t, "eth0", "peer0", macA)
	nstest.Veth(t, "eth1", "peer1", macB)
	nstest.Veth(t, "eth2", "peer2", macC)
	if l, err := netlink.LinkByName("eth1"); err == nil {
		netlink.LinkSetUp(l)
	}
	macD := "52:54:00:00:00:0d"
	nstest.Veth(t, "spare", "peer3", macD)

	renamed, err := Rename([]Rule{
		{MAC: macA, Name: "eth1"},
		{MAC: macB, Name: "eth0"},
		{MAC: macD, Name: "eth2"}, // eth2 has no rule: moves aside
		{MAC: macC, Name: "eth0"}, // collision with the rule above
	})
	wantErr := "rename rule 3 (" + macC + ` to "eth0"): name already given to ` + macB + " by an earlier rule"
	if err == nil || err.Error() != wantErr {
		t.Errorf("Rename error = %v, want %s", err, wantErr)
	}
	t.Logf("renamed: %+v", renamed)
	got := map[string]string{}
	links, _ := netlink.LinkList()
	for _, l := range links {
		if l.Attrs().Name == "lo" || strings.HasPrefix(l.Attrs().Name, "peer") {
			continue
		}
		s := l.Attrs().HardwareAddr.String()
		if l.Attrs().Flags&net.FlagUp != 0 {
			s += "+up"
		}
		got[l.Attrs().Name] = s
	}
	want := map[string]string{"eth0": macB + "+up", "eth1": macA, "eth2": macD, "cirename1": macC}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("links after rename (-want +got):\n%s", diff)
	}
	nics, err := Discover(SysClassNet)
	if err != nil {
		t.Fatal(err)
	}
	if len(nics) != 8 || nics[0].Name != "cirename1" || nics[0].MAC != macC {
		t.Errorf("Discover after rename = %+v", nics)
	}
	// cloud-init's temporary names count up within one run: the swap
	// used cirename0, so the displaced eth2 got cirename1.
	// Running again changes nothing.
	again, err := Rename([]Rule{{MAC: macA, Name: "eth1"}, {MAC: macB, Name: "eth0"}})
	if err != nil || len(again) != 0 {
		t.Errorf("second Rename = %v, %v; want nothing to do", again, err)
	}
}
