package netup

import (
	"fmt"
	"strings"
	"testing"
)

// benchSizes are the interface counts the scaling benchmarks run at: each
// doubles the last, so a linear conversion doubles its time from one to
// the next and a quadratic one quadruples it.
var benchSizes = []int{1000, 2000, 4000, 8000}

func sizeName(n int) string { return fmt.Sprintf("%dk", n/1000) }

func benchMAC(i int) string {
	return fmt.Sprintf("52:54:%02x:%02x:%02x:01", i>>16&255, i>>8&255, i&255)
}

// benchV2Ethernets is a v2 config of n NICs, each matched by MAC, renamed,
// on DHCPv4 with one static address: the shape a big appliance's config
// has.
func benchV2Ethernets(n int) []byte {
	var b strings.Builder
	b.WriteString("network:\n  version: 2\n  ethernets:\n")
	for i := range n {
		fmt.Fprintf(&b, "    e%d:\n      match: {macaddress: '%s'}\n      set-name: n%d\n      dhcp4: true\n      addresses: [10.%d.%d.2/24]\n",
			i, benchMAC(i), i, i>>8&255, i&255)
	}
	return []byte(b.String())
}

// benchV1Virtual is a v1 config of n interfaces in groups of four: two
// NICs, a bond of them and a VLAN on the bond, then a bridge per eight.
func benchV1Virtual(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nconfig:\n")
	for g := range n / 4 {
		fmt.Fprintf(&b, "  - {type: physical, name: p%da, mac_address: '%s'}\n", g, benchMAC(2*g))
		fmt.Fprintf(&b, "  - {type: physical, name: p%db, mac_address: '%s'}\n", g, benchMAC(2*g+1))
		fmt.Fprintf(&b, "  - {type: bond, name: b%d, bond_interfaces: [p%da, p%db], params: {bond-mode: active-backup, bond-miimon: 100}}\n", g, g, g)
		fmt.Fprintf(&b, "  - {type: vlan, name: b%d.5, vlan_link: b%d, vlan_id: 5, subnets: [{type: static, address: 10.%d.%d.2/24}]}\n", g, g, g>>8&255, g&255)
	}
	b.WriteString("  - {type: nameserver, address: [10.0.0.53], search: [example.com]}\n")
	return []byte(b.String())
}

// benchV1NameserverPerNIC is a v1 config of n static NICs, each with a
// nameserver item bound to it.
func benchV1NameserverPerNIC(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nconfig:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {type: physical, name: n%d, mac_address: '%s', subnets: [{type: static, address: 10.%d.%d.2/24}]}\n", i, benchMAC(i), i>>8&255, i&255)
		fmt.Fprintf(&b, "  - {type: nameserver, interface: n%d, address: [10.%d.%d.53]}\n", i, i>>8&255, i&255)
	}
	return []byte(b.String())
}

// benchNetworkData is an OpenStack network_data.json of n NIC links, each
// with a static IPv4 network.
func benchNetworkData(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"links": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id": "l%d", "type": "phy", "name": "n%d", "ethernet_mac_address": "%s", "mtu": 1500}`, i, i, benchMAC(i))
	}
	b.WriteString(`], "networks": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id": "net%d", "type": "ipv4", "link": "l%d", "ip_address": "10.%d.%d.2", "netmask": "255.255.255.0"}`, i, i, i>>8&255, i&255)
	}
	b.WriteString(`], "services": [{"type": "dns", "address": "10.0.0.53"}]}`)
	return []byte(b.String())
}

// benchENI is an interfaces(5) text of n static NICs.
func benchENI(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "auto n%d\niface n%d inet static\n    address 10.%d.%d.2/24\n    hwaddress ether %s\n", i, i, i>>8&255, i&255, benchMAC(i))
	}
	return []byte(b.String())
}

// benchEC2 is EC2's network metadata for n NICs, all on the machine.
func benchEC2(n int) ([]byte, []MAC) {
	var b strings.Builder
	var macs []MAC
	b.WriteString(`{"interfaces": {"macs": {`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"%s": {"device-number": "%d", "local-ipv4s": ["10.0.%d.%d", "10.1.%d.%d"], "subnet-ipv4-cidr-block": "10.0.0.0/16"}`,
			benchMAC(i), i, i>>8&255, i&255, i>>8&255, i&255)
		macs = append(macs, MAC{Name: fmt.Sprintf("n%d", i), Address: benchMAC(i)})
	}
	b.WriteString(`}}}`)
	return []byte(b.String()), macs
}

// benchMetadata builds a cloud's metadata for n NICs, all on the machine,
// one NIC's JSON at a time (nic(i) is the NIC's entry; each starts with
// a comma after the first).
func benchMetadata(n int, head, tail string, nic func(i int) string) ([]byte, []MAC) {
	var b strings.Builder
	var macs []MAC
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(nic(i))
		macs = append(macs, MAC{Name: fmt.Sprintf("n%d", i), Address: benchMAC(i)})
	}
	b.WriteString(tail)
	return []byte(b.String()), macs
}

func benchDigitalOcean(n int) ([]byte, []MAC) {
	return benchMetadata(n, `{"interfaces": {`, `}, "dns": {"nameservers": ["10.0.0.53"]}}`, func(i int) string {
		return fmt.Sprintf(`"t%d": [{"mac": "%s", "type": "t%d", "ipv4": {"ip_address": "10.%d.%d.2", "netmask": "255.255.255.0"}}]`,
			i, benchMAC(i), i, i>>8&255, i&255)
	})
}

func benchVultr(n int) ([]byte, []MAC) {
	return benchMetadata(n, `{"interfaces": [`, `]}`, func(i int) string {
		return fmt.Sprintf(`{"mac": "%s", "ipv4": {"address": "10.%d.%d.2", "netmask": "255.255.255.0"}}`, benchMAC(i), i>>8&255, i&255)
	})
}

func benchAzure(n int) ([]byte, []MAC) {
	return benchMetadata(n, `{"interface": [`, `]}`, func(i int) string {
		return fmt.Sprintf(`{"macAddress": "%s", "ipv4": {"ipAddress": [{"privateIpAddress": "10.%d.%d.4"}, {"privateIpAddress": "10.%d.%d.5"}], "subnet": [{"prefix": "24"}]}}`,
			strings.ReplaceAll(benchMAC(i), ":", ""), i>>8&255, i&255, i>>8&255, i&255)
	})
}

func benchOracle(n int) ([]byte, []MAC) {
	return benchMetadata(n, `[`, `]`, func(i int) string {
		return fmt.Sprintf(`{"macAddr": "%s", "privateIp": "10.%d.%d.5", "subnetCidrBlock": "10.%d.%d.0/24"}`, benchMAC(i), i>>8&255, i&255, i>>8&255, i&255)
	})
}

// BenchmarkNetConvertNetworkd is net-convert of a v2 config of many NICs
// to networkd, at 1k to 8k NICs: its time should double with the count.
func BenchmarkNetConvertNetworkd(b *testing.B) {
	for _, n := range benchSizes {
		input := benchV2Ethernets(n)
		b.Run(sizeName(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Convert(input, KindYAML, OutputNetworkd, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNetConvert is every input shape converted to every output kind
// at 1k to 8k interfaces, to spot any conversion whose time grows faster
// than its input.
func BenchmarkNetConvert(b *testing.B) {
	type input struct {
		name string
		kind string
		make func(n int) ([]byte, []MAC)
	}
	plain := func(f func(int) []byte) func(int) ([]byte, []MAC) {
		return func(n int) ([]byte, []MAC) { return f(n), nil }
	}
	inputs := []input{
		{"v2-ethernets", KindYAML, plain(benchV2Ethernets)},
		{"v1-bond-vlan", KindYAML, plain(benchV1Virtual)},
		{"v1-dns-per-nic", KindYAML, plain(benchV1NameserverPerNIC)},
		{"network_data", KindNetworkDataJSON, plain(benchNetworkData)},
		{"eni", KindENI, plain(benchENI)},
		{"ec2", KindEC2, benchEC2},
		{"digitalocean", KindDigitalOcean, benchDigitalOcean},
		{"vultr", KindVultr, benchVultr},
		{"azure-imds", KindAzureIMDS, benchAzure},
		{"oracle-vnics", KindOracleVNICs, benchOracle},
	}
	for _, in := range inputs {
		for _, out := range []string{OutputNetworkd, OutputENI, OutputNetplan, OutputSysconfig} {
			for _, n := range benchSizes {
				data, macs := in.make(n)
				b.Run(in.name+"/"+out+"/"+sizeName(n), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := Convert(data, in.kind, out, macs); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
