package netup

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// dracut's ip= forms (dracut.cmdline(7)) and the kernel's own.
func TestParseIPParam(t *testing.T) {
	pfx := netip.MustParsePrefix
	addr := netip.MustParseAddr
	for _, tc := range []struct {
		in   string
		want IPParam
		err  string
	}{
		{in: "dhcp", want: IPParam{Method: "dhcp"}},
		{in: "on", want: IPParam{Method: "dhcp"}},
		{in: "any", want: IPParam{Method: "dhcp"}},
		{in: "dhcp6", want: IPParam{Method: "dhcp6"}},
		{in: "auto6", want: IPParam{Method: "auto6"}},
		{in: "off", want: IPParam{Method: "off"}},
		{in: "eth0:dhcp", want: IPParam{Interface: "eth0", Method: "dhcp"}},
		{in: "ens3:dhcp6", want: IPParam{Interface: "ens3", Method: "dhcp6"}},
		{in: "eth1:dhcp:9000:52:54:00:12:34:56", want: IPParam{Interface: "eth1", Method: "dhcp", MTU: 9000, MAC: "52:54:00:12:34:56"}},
		{in: "10.0.0.5::10.0.0.1:255.255.255.0:waf:eth0:none",
			want: IPParam{Interface: "eth0", Method: "static", Address: pfx("10.0.0.5/24"), Gateway: addr("10.0.0.1"), Hostname: "waf"}},
		{in: "10.0.0.5::10.0.0.1:255.255.255.0:waf:eth0:none:10.0.0.53:10.0.0.54",
			want: IPParam{Interface: "eth0", Method: "static", Address: pfx("10.0.0.5/24"), Gateway: addr("10.0.0.1"), Hostname: "waf", DNS: []netip.Addr{addr("10.0.0.53"), addr("10.0.0.54")}}},
		{in: "10.0.0.5::10.0.0.1:255.255.255.0::eth0:off:1450",
			want: IPParam{Interface: "eth0", Method: "static", Address: pfx("10.0.0.5/24"), Gateway: addr("10.0.0.1"), MTU: 1450}},
		{in: "10.0.0.5::10.0.0.1:255.255.255.0::eth0:none:1500:52:54:00:aa:bb:cc",
			want: IPParam{Interface: "eth0", Method: "static", Address: pfx("10.0.0.5/24"), Gateway: addr("10.0.0.1"), MTU: 1500, MAC: "52:54:00:aa:bb:cc"}},
		{in: "192.168.7.20:::22::mgmt0:none", want: IPParam{Interface: "mgmt0", Method: "static", Address: pfx("192.168.7.20/22")}},
		{in: "172.16.3.4/20::172.16.0.1:::eth0:none", want: IPParam{Interface: "eth0", Method: "static", Address: pfx("172.16.3.4/20"), Gateway: addr("172.16.0.1")}},
		{in: "10.1.2.3::10.0.0.1::::none", want: IPParam{Method: "static", Address: pfx("10.1.2.3/8"), Gateway: addr("10.0.0.1")}},
		{in: "[2001:db8::2]::[2001:db8::1]:64::eth0:none:[2001:db8::53]",
			want: IPParam{Interface: "eth0", Method: "static", Address: pfx("2001:db8::2/64"), Gateway: addr("2001:db8::1"), DNS: []netip.Addr{addr("2001:db8::53")}}},
		{in: "10.0.0.5::10.0.0.1:255.255.255.0::eth0:dhcp", want: IPParam{Interface: "eth0", Method: "dhcp", Gateway: addr("10.0.0.1")}},
		{in: "ibft", err: "ibft is not supported"},
		{in: "eth0:bogus", err: `autoconf "bogus"`},
		{in: "10.0.0.5::10.0.0.1:255.0.255.0::eth0:none", err: "netmask"},
		{in: "10.0.0.5::gw:24::eth0:none", err: "gateway"},
		{in: "10.0.0.5::10.0.0.1:24::eth0", err: "want CLIENT"},
		{in: "10.0.0.5::10.0.0.1:24::eth0:none:99999", err: "MTU"},
		{in: "10.0.0.5::10.0.0.1:24::eth0:none:1.2.3.4:5.6.7.8:9.9.9.9", err: "more than two"},
		{in: "[2001:db8::2::eth0:none", err: "unbalanced"},
		{in: "averylongnicname0:dhcp", err: "not a NIC's name"},
		{in: "none", want: IPParam{Method: "off"}},
		{in: "eth0:off", want: IPParam{Interface: "eth0", Method: "off"}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseIPParam(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q (got %+v)", err, tc.err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateComparable(netip.Prefix{}, netip.Addr{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The command line's network as the instance's config, through seedinit's
// own v1 reader: what PID 1 applies live and the network module renders.
func TestKernelNetworkDocument(t *testing.T) {
	nics := []MAC{{Name: "eth0", Address: "52:54:00:00:00:01"}, {Name: "eth1", Address: "52:54:00:00:00:02"}}
	for _, tc := range []struct {
		name, cmdline string
		check         func(t *testing.T, n *model.Network)
		source        string
	}{
		{"static with DNS, renamed by ifname=", "console=ttyS0 ifname=mgmt0:52:54:00:00:00:02 ip=10.77.0.50::10.77.0.1:255.255.255.0:waf:mgmt0:none nameserver=10.77.0.1 root=/dev/vda1", func(t *testing.T, n *model.Network) {
			i := iface(t, n, "mgmt0")
			if i.MACAddress != "52:54:00:00:00:02" || len(i.Subnets) != 1 || i.Subnets[0].Address != "10.77.0.50" || i.Subnets[0].Prefix != 24 || i.Subnets[0].Gateway != "10.77.0.1" {
				t.Errorf("mgmt0 %+v", i)
			}
			if !cmp.Equal(n.DNS.Nameservers, []string{"10.77.0.1"}) {
				t.Errorf("DNS %+v", n.DNS)
			}
		}, SourceKernelIP},
		{"static without an interface: the first NIC", "ip=10.0.0.9::10.0.0.1:24:::none", func(t *testing.T, n *model.Network) {
			if i := iface(t, n, "eth0"); i.Subnets[0].Address != "10.0.0.9" || i.Subnets[0].Prefix != 24 {
				t.Errorf("eth0 %+v", i)
			}
		}, SourceKernelIP},
		{"dhcp everywhere", "ip=dhcp", func(t *testing.T, n *model.Network) {
			for _, name := range []string{"eth0", "eth1"} {
				if i := iface(t, n, name); i.Subnets[0].Type != "dhcp4" {
					t.Errorf("%s %+v", name, i)
				}
			}
		}, SourceKernelIP},
		{"one NIC dhcp, another static, mtu", "ip=eth0:dhcp ip=10.9.0.2::10.9.0.1:255.255.0.0::eth1:none:9000", func(t *testing.T, n *model.Network) {
			if i := iface(t, n, "eth0"); i.Subnets[0].Type != "dhcp4" {
				t.Errorf("eth0 %+v", i)
			}
			if i := iface(t, n, "eth1"); i.MTU != 9000 || i.Subnets[0].Address != "10.9.0.2" || i.Subnets[0].Prefix != 16 {
				t.Errorf("eth1 %+v", i)
			}
		}, SourceKernelIP},
		{"network-config= wins over ip=", "ip=dhcp network-config=" + base64.StdEncoding.EncodeToString([]byte("version: 2\nethernets: {eth1: {addresses: [10.5.0.5/24]}}\n")), func(t *testing.T, n *model.Network) {
			if s := iface(t, n, "eth1").Subnets; len(n.Interfaces) != 1 || s[0].Address != "10.5.0.5" {
				t.Errorf("%d interfaces, eth1 %+v", len(n.Interfaces), s)
			}
		}, SourceKernelNetworkConfig},
		{"network-config= gzip'd", "network-config=" + gzipB64(t, "version: 1\nconfig: [{type: physical, name: eth0, subnets: [{type: static, address: 10.6.0.6/24}]}]\n"), func(t *testing.T, n *model.Network) {
			if s := iface(t, n, "eth0").Subnets; s[0].Address != "10.6.0.6" {
				t.Errorf("eth0 %+v", s)
			}
		}, SourceKernelNetworkConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := ParseKernelNetwork(tc.cmdline)
			if k == nil || len(k.Problems) > 0 {
				t.Fatalf("ParseKernelNetwork = %+v", k)
			}
			doc, kind, source := k.Document(nics)
			if source != tc.source {
				t.Errorf("source %q, want %q", source, tc.source)
			}
			n, err := Parse(doc, kind, nics)
			if err != nil {
				t.Fatalf("parse %s: %v", doc, err)
			}
			tc.check(t, n)
		})
	}
	for _, none := range []string{"root=/dev/vda1 console=ttyS0", "ip=off", "network-config=disabled"} {
		if doc, _, _ := ParseKernelNetwork(none).Document(nics); doc != nil {
			t.Errorf("%q gives %s", none, doc)
		}
	}
	if k := ParseKernelNetwork("network-config=disabled"); k == nil || !k.Disabled {
		t.Errorf("network-config=disabled: %+v", k)
	}
	k := ParseKernelNetwork("ip=10.0.0.5::x:24::eth0:none nameserver=nope ifname=eth0 ip=eth1:dhcp")
	if len(k.Problems) != 3 || len(k.IP) != 1 || k.Static() {
		t.Errorf("bad values passed over with a problem each: %+v", k)
	}
	if !ParseKernelNetwork("ip=10.0.0.5:::24::eth0:none").Static() || ParseKernelNetwork("ip=dhcp").Static() {
		t.Error("Static")
	}
	// A gzip bomb on the command line stops at the bound.
	var big bytes.Buffer
	zw := gzip.NewWriter(&big)
	zw.Write(bytes.Repeat([]byte("#"), 4<<20))
	zw.Close()
	if k := ParseKernelNetwork("network-config=" + base64.StdEncoding.EncodeToString(big.Bytes())); k.Config != nil || len(k.Problems) != 1 || !strings.Contains(k.Problems[0], "more than") {
		t.Errorf("gzip bomb: %+v", k.Problems)
	}
}

func iface(t *testing.T, n *model.Network, name string) *model.Interface {
	t.Helper()
	for _, i := range n.Interfaces {
		if i.Name == name {
			return i
		}
	}
	t.Fatalf("no %s in %+v", name, n.Interfaces)
	return nil
}

func gzipB64(t *testing.T, s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// cloud-init's read_kernel_cmdline_config as the oracle for
// network-config=: plain and gzip'd base64, the last one given, disabled,
// and what it ignores.
func TestKernelNetworkConfigOracle(t *testing.T) {
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import cloudinit.net.cmdline").Run(); err != nil {
		t.Skip("cloud-init oracle unavailable: cannot import cloudinit.net.cmdline (install Debian's cloud-init package)")
	}
	v2 := "version: 2\nethernets: {eth0: {dhcp4: true}}\n"
	for _, cmdline := range []string{
		"ro network-config=" + base64.StdEncoding.EncodeToString([]byte(v2)),
		"network-config=" + gzipB64(t, v2),
		"network-config=" + base64.StdEncoding.EncodeToString([]byte("version: 1\nconfig: []\n")) + " network-config=" + base64.StdEncoding.EncodeToString([]byte(v2)),
		"network-config=disabled",
		"network-config=" + base64.StdEncoding.EncodeToString([]byte("")),
		"root=/dev/vda1",
	} {
		out, err := exec.Command(py, "-c", "import json, sys\nfrom cloudinit.net import cmdline\nprint(json.dumps(cmdline.read_kernel_cmdline_config(sys.argv[1])))", cmdline).Output()
		if err != nil {
			t.Fatalf("cloud-init: %v", err)
		}
		var want any
		json.Unmarshal(out, &want)
		k := ParseKernelNetwork(cmdline)
		var got any
		switch {
		case k != nil && k.Disabled:
			got = map[string]any{"config": "disabled"}
		case k != nil && k.Config != nil:
			got = yamlToJSON(k.Config)
		}
		if !cmp.Equal(want, got) {
			t.Errorf("%.60s: cloud-init %v, seedinit %v", cmdline, want, got)
		}
	}
}

func yamlToJSON(b []byte) any {
	doc, _ := yaml11.Load(b)
	raw, _ := json.Marshal(doc)
	var v any
	json.Unmarshal(raw, &v)
	return v
}

func FuzzParseKernelNetwork(f *testing.F) {
	f.Add("ip=10.0.0.5::10.0.0.1:255.255.255.0:waf:eth0:none:10.0.0.53 nameserver=1.1.1.1 ifname=mgmt0:52:54:00:00:00:01")
	f.Add("ip=[2001:db8::2]::[2001:db8::1]:64::eth0:none ip=eth1:dhcp:1500:52:54:00:12:34:56")
	f.Add("network-config=dmVyc2lvbjogMgo=")
	f.Fuzz(func(t *testing.T, cmdline string) {
		k := ParseKernelNetwork(cmdline)
		doc, kind, _ := k.Document([]MAC{{Name: "eth0", Address: "52:54:00:00:00:01"}})
		if doc != nil && k.Config == nil {
			// What ip= gives, seedinit's own v1 reader reads.
			if _, err := Parse(doc, kind, nil); err != nil {
				t.Fatalf("%q gives a document that does not parse: %v\n%s", cmdline, err, doc)
			}
		}
	})
}
