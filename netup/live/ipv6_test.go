package live

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/nstest"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/model"
)

// TestPrepareIPv6Plan runs in a namespace because SLAAC plans set the
// accept_ra sysctl of the link.
func TestPrepareIPv6Plan(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	nstest.Veth(t, "eth0", "peer0", "52:54:00:00:06:09")
	tests := []struct {
		name     string
		subnets  []string
		acceptRA *bool
		want     ipv6Plan
		wantRA   string
		wantErr  bool
	}{
		{name: "dhcp6", subnets: []string{model.SubnetDHCP6}, want: ipv6Plan{iface: "eth0", stateful: true}, wantRA: "1"},
		{name: "stateful", subnets: []string{model.SubnetDHCP6Stateful}, want: ipv6Plan{iface: "eth0", stateful: true}, wantRA: "1"},
		{name: "stateless", subnets: []string{model.SubnetDHCP6Stateless}, want: ipv6Plan{iface: "eth0", stateless: true, slaac: true}, wantRA: "1"},
		{name: "slaac", subnets: []string{model.SubnetSLAAC}, want: ipv6Plan{iface: "eth0", slaac: true}, wantRA: "1"},
		{name: "dhcp4 only", subnets: []string{model.SubnetDHCP4}, want: ipv6Plan{iface: "eth0"}, wantRA: "1"},
		{name: "dual stack", subnets: []string{model.SubnetDHCP, model.SubnetDHCP6, model.SubnetSLAAC}, want: ipv6Plan{iface: "eth0", stateful: true, slaac: true}, wantRA: "1"},
		{name: "accept-ra false with dhcp6", subnets: []string{model.SubnetDHCP6}, acceptRA: new(false), want: ipv6Plan{iface: "eth0", stateful: true}, wantRA: "0"},
		{name: "accept-ra false with slaac", subnets: []string{model.SubnetSLAAC}, acceptRA: new(false), want: ipv6Plan{iface: "eth0"}, wantRA: "0", wantErr: true},
		{name: "accept-ra false with stateless", subnets: []string{model.SubnetDHCP6Stateless}, acceptRA: new(false), want: ipv6Plan{iface: "eth0", stateless: true}, wantRA: "0", wantErr: true},
		{name: "accept-ra true again", subnets: []string{model.SubnetStatic6}, acceptRA: new(true), want: ipv6Plan{iface: "eth0"}, wantRA: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iface := &model.Interface{Name: "eth0", AcceptRA: tt.acceptRA}
			for _, s := range tt.subnets {
				iface.Subnets = append(iface.Subnets, model.Subnet{Type: s})
			}
			got, errs := prepareIPv6(iface)
			if (len(errs) != 0) != tt.wantErr {
				t.Errorf("errors = %v, want errors: %v", errs, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(ipv6Plan{})); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			ra, err := os.ReadFile("/proc/sys/net/ipv6/conf/eth0/accept_ra")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(ra)); got != tt.wantRA {
				t.Errorf("accept_ra = %s, want %s", got, tt.wantRA)
			}
		})
	}
}

// TestApplyIPv6Dnsmasq applies a config with a dhcp6 and an ipv6_slaac
// subnet on eth0 against dnsmasq (DHCPv6 range with SLAAC), and one with
// accept-ra false and ipv6_slaac on eth1, which is reported and not
// waited for.
func TestApplyIPv6Dnsmasq(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	nstest.Veth(t, "eth0", "srv", "52:54:00:00:06:01")
	nstest.Veth(t, "eth1", "deadend", "52:54:00:00:06:02")
	srv, _ := netlink.LinkByName("srv")
	addr, _ := netlink.ParseAddr("fd00:77::1/64")
	addr.Flags = unix.IFA_F_NODAD
	if err := netlink.AddrAdd(srv, addr); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(srv); err != nil {
		t.Fatal(err)
	}
	nstest.Dnsmasq(t, t.TempDir(), "--interface=srv", "--bind-interfaces", "--enable-ra", "--ra-param=srv,3",
		"--dhcp-range=fd00:77::100,fd00:77::1ff,slaac,64",
		"--dhcp-option=option6:dns-server,[fd00:77::53]")
	acceptRA := false
	n := &model.Network{Version: 1, Interfaces: []*model.Interface{
		{Name: "eth0", Type: model.TypePhysical, MACAddress: "52:54:00:00:06:01",
			Subnets: []model.Subnet{{Type: model.SubnetDHCP6}, {Type: model.SubnetSLAAC}}},
		{Name: "eth1", Type: model.TypePhysical, MACAddress: "52:54:00:00:06:02", AcceptRA: &acceptRA,
			Subnets: []model.Subnet{{Type: model.SubnetSLAAC}}},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Apply(ctx, n, Options{DHCP: dhcp.Options{Timeout: 2 * time.Second, Retries: 4}, SLAACTimeout: 25 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "eth1: its SLAAC subnet needs router advertisements but accept-ra is false") {
		t.Errorf("error = %v, want only eth1's accept-ra conflict", err)
	} else if strings.Contains(err.Error(), "eth0") {
		t.Errorf("eth0 failed: %v", err)
	}
	if len(res.Leases6) != 1 || !res.Leases6[0].Address.IsValid() {
		t.Fatalf("DHCPv6 leases = %+v, want one with an address", res.Leases6)
	}
	slaac := "fd00:77::5054:ff:fe00:601/64"
	if got := res.SLAAC["eth0"]; len(got) != 1 || got[0].String() != slaac {
		t.Errorf("SLAAC on eth0 = %v, want %s", got, slaac)
	}
	want := []string{res.Leases6[0].Address.String() + "/128", slaac}
	sort.Strings(want)
	if diff := cmp.Diff(want, nstest.Addrs(t, "eth0", netlink.FAMILY_V6)); diff != "" {
		t.Errorf("eth0 addresses (-want +got):\n%s", diff)
	}
	if got := nstest.Addrs(t, "eth1", netlink.FAMILY_V6); len(got) != 0 {
		t.Errorf("eth1 addresses = %v, want none", got)
	}
	if !hasDefaultRoute6(t, "eth0") {
		t.Error("no IPv6 default route from the router advertisement on eth0")
	}
	wantResolv := "# Generated by seedinit from the DHCPv6 reply on eth0\nnameserver fd00:77::53\n"
	if diff := cmp.Diff(wantResolv, string(res.ResolvConf)); diff != "" {
		t.Errorf("resolv.conf (-want +got):\n%s", diff)
	}
	// Applying again converges: the same addresses, no duplicates.
	res2, _ := Apply(ctx, n, Options{DHCP: dhcp.Options{Timeout: 2 * time.Second, Retries: 4}, SLAACTimeout: 25 * time.Second})
	if res2 == nil || len(res2.Leases6) != 1 {
		t.Fatalf("second apply leases = %+v", res2)
	}
	if got := nstest.Addrs(t, "eth0", netlink.FAMILY_V6); len(got) != 2 {
		t.Errorf("eth0 addresses after a second apply = %v, want the same two", got)
	}
}

func hasDefaultRoute6(t *testing.T, name string) bool {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	routes, err := netlink.RouteList(l, netlink.FAMILY_V6)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if (r.Dst == nil || r.Dst.IP.IsUnspecified()) && r.Gw != nil {
			return true
		}
	}
	return false
}
