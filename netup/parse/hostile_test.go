package parse

import (
	"errors"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/netup/internal/rendercheck"
	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/netup/render"
)

// hostileCase is a config with a value that would break out of its line
// in a rendered file (or out of net-convert's output directory), and
// what the error must say: the key and the value, quoted.
type hostileCase struct {
	name    string
	input   string
	wantErr string
}

var hostileV1 = []hostileCase{
	{"MAC with a newline and an up command",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    mac_address: \"52:54:00:12:34:56\\n  up touch /tmp/PWNED\"\n    subnets: [{type: dhcp}]\n",
		`config[0] (physical eth0): key "mac_address": "52:54:00:12:34:56\n  up touch /tmp/PWNED": not a MAC address`},
	{"MAC closing the udev rule for a RUN+=",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    mac_address: '52:54:00:12:34:56\", RUN+=\"/bin/touch /tmp/PWNED'\n",
		`key "mac_address": "52:54:00:12:34:56\", RUN+=\"/bin/touch /tmp/PWNED": not a MAC address`},
	{"name climbing out of the output directory",
		"version: 1\nconfig:\n  - {type: physical, name: ../../../../tmp/X, subnets: [{type: dhcp}]}\n",
		`key "name": "../../../../tmp/X": not an interface name`},
	{"NUL in a name",
		"version: 1\nconfig:\n  - {type: physical, name: \"eth\\0\"}\n",
		`key "name": "eth\x00": not an interface name`},
	{"name of 100000 bytes",
		"version: 1\nconfig:\n  - {type: physical, name: " + strings.Repeat("a", 100000) + "}\n",
		`key "name": "` + strings.Repeat("a", 64) + `"… (100000 bytes): not an interface name`},
	{"name of 16 bytes",
		"version: 1\nconfig:\n  - {type: physical, name: abcdefghijklmnop}\n",
		`key "name": "abcdefghijklmnop": not an interface name`},
	{"name with a quote",
		"version: 1\nconfig:\n  - {type: physical, name: 'eth0\"'}\n",
		`key "name": "eth0\"": not an interface name`},
	{"gateway starting a shell assignment",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: static, address: 10.0.0.2/24, gateway: \"10.0.0.1\\nDNS1=6.6.6.6\"}]\n",
		`subnets[0]: key "gateway": "10.0.0.1\nDNS1=6.6.6.6": not an IP address`},
	{"search domain adding a nameserver",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: static, address: 10.0.0.2/24, dns_search: [\"a.example\\nnameserver 6.6.6.6\"]}]\n",
		`key "dns_search[0]": "a.example\nnameserver 6.6.6.6": not a DNS domain name`},
	{"search domain with a shell expansion",
		"version: 1\nconfig:\n  - {type: nameserver, address: [10.0.0.53], search: ['$(touch /tmp/PWNED)']}\n",
		`key "search[0]": "$(touch /tmp/PWNED)": not a DNS domain name`},
	{"nameserver with a second line",
		"version: 1\nconfig:\n  - {type: nameserver, address: [\"1.1.1.1\\nnameserver 6.6.6.6\"]}\n",
		`key "address[0]": "1.1.1.1\nnameserver 6.6.6.6": not an IP address`},
	{"params key ifupdown runs",
		"version: 1\nconfig:\n  - {type: physical, name: eth0}\n  - {type: bond, name: bond0, bond_interfaces: [eth0], params: {up: touch /tmp/PWNED}}\n",
		`params: "up": not a link parameter: ifupdown runs this option as a command`},
	{"params key in ifupdown2's spelling",
		"version: 1\nconfig:\n  - {type: physical, name: eth0, params: {post_up: touch /tmp/PWNED}}\n",
		`params: "post_up": not a link parameter`},
	{"params key with a space",
		"version: 1\nconfig:\n  - {type: physical, name: eth0, params: {'up touch /tmp/PWNED': 1}}\n",
		`params: "up touch /tmp/PWNED": not a link parameter name`},
	{"params value with a command substitution",
		"version: 1\nconfig:\n  - {type: physical, name: eth0}\n  - {type: bond, name: bond0, bond_interfaces: [eth0], params: {bond-mode: '$(touch /tmp/PWNED)'}}\n",
		`key "bond-mode": "$(touch /tmp/PWNED)": not a link parameter value`},
	{"params value with a newline",
		"version: 1\nconfig:\n  - {type: bridge, name: br0, bridge_interfaces: [eth0], params: {bridge_fd: \"15\\n    up touch /tmp/PWNED\"}}\n",
		`key "bridge_fd": "15\n    up touch /tmp/PWNED": not a link parameter value`},
	{"driver closing the udev rule",
		"version: 1\nconfig:\n  - {type: physical, name: eth0, mac_address: '52:54:00:12:34:56', params: {driver: 'virtio_net\", RUN+=\"/bin/sh'}}\n",
		`params: key "driver": "virtio_net\", RUN+=\"/bin/sh": not a kernel driver name`},
	{"subnet type with a second stanza line",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: \"dhcp\\n    up touch /tmp/PWNED\"}]\n",
		`key "type": "dhcp\n    up touch /tmp/PWNED": not a word`},
	{"control with a second line",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: dhcp, control: \"manual\\nup touch /tmp/PWNED\"}]\n",
		`key "control": "manual\nup touch /tmp/PWNED": not a word`},
	{"bridge port climbing out",
		"version: 1\nconfig:\n  - {type: bridge, name: br0, bridge_interfaces: [../x]}\n",
		`key "bridge_interfaces[0]": "../x": not an interface name`},
	{"bond member with a quote",
		"version: 1\nconfig:\n  - {type: bond, name: bond0, bond_interfaces: ['eth0\"'], params: {}}\n",
		`key "bond_interfaces[0]": "eth0\"": not an interface name`},
	{"VLAN link with a newline",
		"version: 1\nconfig:\n  - {type: vlan, name: v5, vlan_id: 5, vlan_link: \"eth0\\nup x\"}\n",
		`key "vlan_link": "eth0\nup x": not an interface name`},
	{"MTU out of range",
		"version: 1\nconfig:\n  - {type: physical, name: eth0, mtu: 70000}\n",
		`key "mtu": "70000": not an MTU (68 to 65536)`},
	{"negative route metric",
		"version: 1\nconfig:\n  - {type: route, destination: 10.0.0.0/8, gateway: 10.0.0.1, metric: -1}\n",
		`key "metric": "-1": not a route metric`},
	{"route gateway with a newline",
		"version: 1\nconfig:\n  - {type: route, destination: 10.0.0.0/8, gateway: \"10.0.0.1\\nGATEWAY0=6.6.6.6\"}\n",
		`key "gateway": "10.0.0.1\nGATEWAY0=6.6.6.6": not an IP address`},
	{"unquoted all-digit MAC, a base-60 number in YAML 1.1",
		"version: 1\nconfig:\n  - {type: physical, name: eth0, mac_address: 52:54:00:12:34:56}\n",
		`key "mac_address": "41135085296": not a MAC address (6 or, for InfiniBand, 20 hex octets, each two digits, separated by ":" or "-"); YAML 1.1 reads an unquoted MAC of digits and colons as a base-60 number: quote it`},
	{"zone that is not an interface name",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: static6, address: 'fd00::2/64', gateway: \"fe80::1%eth0\\nx\"}]\n",
		`key "gateway": "fe80::1%eth0\nx": not an IP address`},
}

var hostileV2 = []hostileCase{
	{"match MAC with a newline",
		"network:\n  version: 2\n  ethernets:\n    e0:\n      match: {macaddress: \"52:54:00:12:34:56\\n  up touch /tmp/PWNED\"}\n      set-name: eth0\n      dhcp4: true\n",
		`ethernets.e0: match: key "macaddress": "52:54:00:12:34:56\n  up touch /tmp/PWNED": not a MAC address`},
	{"set-name climbing out of the output directory",
		"network:\n  version: 2\n  ethernets:\n    e0:\n      match: {macaddress: '52:54:00:12:34:56'}\n      set-name: ../../../../tmp/X\n      dhcp4: true\n",
		`ethernets.e0: key "set-name": "../../../../tmp/X": not an interface name`},
	{"ethernet named by its key, climbing out",
		"network:\n  version: 2\n  ethernets:\n    ../../../../tmp/X:\n      dhcp4: true\n",
		`ethernets."../../../../tmp/X": key "name": "../../../../tmp/X": not an interface name`},
	{"DHCP override hostname starting a section",
		"network:\n  version: 2\n  ethernets:\n    eth0:\n      dhcp4: true\n      dhcp4-overrides: {hostname: \"h\\n[Match]\\nName=*\"}\n",
		`ethernets.eth0: dhcp4-overrides: key "hostname": "h\n[Match]\nName=*": not a host name`},
	{"DHCP override boolean with a backslash",
		"network:\n  version: 2\n  ethernets:\n    eth0:\n      dhcp4: true\n      dhcp4-overrides: {use-dns: 'no\\'}\n",
		`dhcp4-overrides: key "use-dns": "no\\": not a boolean`},
	{"search domain with a newline",
		"network:\n  version: 2\n  ethernets:\n    eth0:\n      addresses: [10.0.0.2/24]\n      nameservers: {addresses: [10.0.0.53], search: [\"a.example\\nnameserver 6.6.6.6\"]}\n",
		`ethernets.eth0: key "nameservers.search[0]": "a.example\nnameserver 6.6.6.6": not a DNS domain name`},
	{"search domain with a shell expansion",
		"network:\n  version: 2\n  ethernets:\n    eth0:\n      addresses: [10.0.0.2/24]\n      nameservers: {addresses: [10.0.0.53], search: ['`touch /tmp/PWNED`']}\n",
		"ethernets.eth0: key \"nameservers.search[0]\": \"`touch /tmp/PWNED`\": not a DNS domain name"},
	{"route via with a second line",
		"network:\n  version: 2\n  ethernets:\n    eth0:\n      addresses: [10.0.0.2/24]\n      routes: [{to: 10.1.0.0/16, via: '10.0.0.1 metric 5; touch /tmp/PWNED'}]\n",
		`ethernets.eth0: key "routes[0].via": "10.0.0.1 metric 5; touch /tmp/PWNED": not an IP address`},
	{"NUL in a wifi SSID passed through",
		"network:\n  version: 2\n  wifis:\n    wlan0:\n      access-points: {\"home\\0\": {password: secret}}\n",
		`network.wifis.wlan0.access-points: key "home\x00": holds a control character`},
	{"bond member with a quote",
		"network:\n  version: 2\n  bonds:\n    bond0:\n      interfaces: ['eth0\"']\n",
		`bonds.bond0: key "interfaces[0]": "eth0\"": not an interface name`},
	{"VLAN link climbing out",
		"network:\n  version: 2\n  vlans:\n    v5: {id: 5, link: ../x}\n",
		`vlans.v5: key "link": "../x": not an interface name`},
	{"bridge path cost of a port that is no name",
		"network:\n  version: 2\n  bridges:\n    br0:\n      interfaces: [eth0]\n      parameters: {path-cost: {'eth0\"': 5}}\n",
		`key "bridge_pathcost": "eth0\"": not an interface name`},
	{"gateway4 with a newline",
		"network:\n  version: 2\n  ethernets:\n    eth0:\n      addresses: [10.0.0.2/24]\n      gateway4: \"10.0.0.1\\nDNS1=6.6.6.6\"\n",
		`ethernets.eth0: key "gateway4": "10.0.0.1\nDNS1=6.6.6.6": not an IP address`},
}

var hostileNetworkData = []hostileCase{
	{"MAC with a newline and an up command",
		`{"links": [{"id": "l0", "type": "phy", "ethernet_mac_address": "fa:16:3e:00:20:01\n  up touch /tmp/PWNED"}],
		  "networks": [{"id": "n0", "type": "ipv4_dhcp", "link": "l0"}]}`,
		`links[0] (id l0): key "ethernet_mac_address": "fa:16:3e:00:20:01\n  up touch /tmp/PWNED": not a MAC address`},
	{"named link climbing out of the output directory",
		`{"links": [{"id": "l0", "type": "phy", "name": "../../../../tmp/X", "ethernet_mac_address": "fa:16:3e:00:20:01"}]}`,
		`key "name": "../../../../tmp/X": not an interface name`},
	{"VLAN id with a second line",
		`{"links": [{"id": "l0", "type": "phy", "ethernet_mac_address": "fa:16:3e:00:20:01"},
		            {"id": "v", "type": "vlan", "vlan_link": "l0", "vlan_id": "5\nup touch /tmp/PWNED"}]}`,
		`links[1] (id v): key "vlan_id": "5\nup touch /tmp/PWNED": not a VLAN id`},
	{"DNS service adding a nameserver",
		`{"links": [], "services": [{"type": "dns", "address": "1.1.1.1\nnameserver 6.6.6.6"}]}`,
		`key "address[0]": "1.1.1.1\nnameserver 6.6.6.6": not an IP address`},
	{"bond parameter with a command substitution",
		`{"links": [{"id": "l0", "type": "phy", "ethernet_mac_address": "fa:16:3e:00:20:01"},
		            {"id": "b", "type": "bond", "bond_links": ["l0"], "bond_mode": "$(touch /tmp/PWNED)"}]}`,
		`key "bond_mode": "$(touch /tmp/PWNED)": not a link parameter value`},
	{"network gateway with a newline",
		`{"links": [{"id": "l0", "type": "phy", "ethernet_mac_address": "fa:16:3e:00:20:01"}],
		  "networks": [{"id": "n0", "type": "ipv4", "link": "l0", "ip_address": "10.0.0.2", "netmask": "255.255.255.0", "gateway": "10.0.0.1\nDNS1=6.6.6.6"}]}`,
		`key "gateway": "10.0.0.1\nDNS1=6.6.6.6": not an IP address`},
	{"MTU with a newline",
		`{"links": [{"id": "l0", "type": "phy", "ethernet_mac_address": "fa:16:3e:00:20:01", "mtu": "1500\nx"}]}`,
		`key "mtu": "1500\nx": not an MTU`},
}

var hostileENI = []hostileCase{
	{"control character in a name",
		"auto et\x01h0\niface et\x01h0 inet dhcp\n",
		`key "name": "et\x01h0": not an interface name`},
	{"name climbing out of the output directory",
		"iface ../../../../tmp/X inet dhcp\n",
		`key "name": "../../../../tmp/X": not an interface name`},
	{"hardware address with an escape sequence",
		"iface eth0 inet dhcp\n    hwaddress ether 52:54:00:12:34:56\x1b[2J\n",
		`key "mac_address": "52:54:00:12:34:56\x1b[2J": not a MAC address`},
	{"search domain with a terminal escape",
		"iface eth0 inet static\n    address 10.0.0.2/24\n    dns-search a.example\x1b]0;x\x07\n",
		`key "dns_search[0]": "a.example\x1b]0;x\a": not a DNS domain name`},
	{"method with a control character",
		"iface eth0 inet dhcp\x01\n",
		`key "type": "dhcp\x01": not a word`},
	{"gateway that is no address",
		"iface eth0 inet static\n    address 10.0.0.2/24\n    gateway $(reboot)\n",
		`key "gateway": "$(reboot)": not an IP address`},
}

// TestHostileValuesRefuseTheConfig feeds each parser configs with a value
// that, as cloud-init passes it on, becomes a line of its own in a
// rendered file (a RUN+= in the udev rules, an "up" command in ENI, a
// shell assignment in ifcfg) or a path above net-convert's output
// directory. The whole config must be refused, with an error that names
// the key and quotes the value with its control characters escaped.
func TestHostileValuesRefuseTheConfig(t *testing.T) {
	parsers := []struct {
		name  string
		cases []hostileCase
		parse func([]byte, Options) (*model.Network, error)
	}{
		{"v1", hostileV1, YAML},
		{"v2", hostileV2, YAML},
		{"network_data.json", hostileNetworkData, NetworkDataJSON},
		{"eni", hostileENI, ENI},
	}
	for _, p := range parsers {
		for _, tc := range p.cases {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				n, err := p.parse([]byte(tc.input), Options{MACs: map[string]string{"fa:16:3e:00:20:01": "eth0"}})
				if n != nil {
					t.Errorf("a network came back: %+v", n)
				}
				if !errors.Is(err, ErrInvalidValue) {
					t.Fatalf("error %v is not ErrInvalidValue", err)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error\n%s\ndoes not say\n%s", err, tc.wantErr)
				}
				checkErrorText(t, err)
			})
		}
	}
}

// TestHostileCloudMetadataRefused checks the clouds' metadata formats:
// their MACs and names reach the same files. The machine is said to have
// a NIC with the hostile MAC, as a --mac of net-convert could say.
func TestHostileCloudMetadataRefused(t *testing.T) {
	const mac = "02:00:17:05:d1:db\n  up touch /tmp/PWNED"
	machine := Options{MACs: map[string]string{mac: "eth0"}}
	tests := []struct {
		name    string
		parse   func([]byte, Options) (*model.Network, error)
		input   string
		opts    Options
		wantErr string
	}{
		{"EC2", EC2, `{"interfaces": {"macs": {"02:00:17:05:d1:db\n  up touch /tmp/pwned": {"device-number": "0"}}}}`, machine,
			`match: key "macaddress": "02:00:17:05:d1:db\n  up touch /tmp/pwned": not a MAC address`},
		{"DigitalOcean", DigitalOcean, `{"interfaces": {"public": [{"mac": "02:00:17:05:d1:db\n  up touch /tmp/PWNED", "type": "public",
			"ipv4": {"ip_address": "45.55.50.93", "netmask": "255.255.224.0", "gateway": "45.55.32.1"}}]}}`, machine,
			`key "mac_address": "02:00:17:05:d1:db\n  up touch /tmp/pwned": not a MAC address`},
		{"DigitalOcean gateway", DigitalOcean, `{"interfaces": {"public": [{"mac": "02:00:17:05:d1:dc", "type": "public",
			"ipv4": {"ip_address": "45.55.50.93", "netmask": "255.255.224.0", "gateway": "45.55.32.1\nDNS1=6.6.6.6"}}]}}`,
			Options{MACs: map[string]string{"02:00:17:05:d1:dc": "eth0"}},
			`key "gateway": "45.55.32.1\nDNS1=6.6.6.6": not an IP address`},
		{"Vultr", Vultr, `{"interfaces": [{"mac": "02:00:17:05:d1:db\n  up touch /tmp/PWNED"}]}`, machine,
			`key "mac_address": "02:00:17:05:d1:db\n  up touch /tmp/PWNED": not a MAC address`},
		{"Vultr route", Vultr, `{"interfaces": [{"mac": "02:00:17:05:d1:dc", "routes": [{"network": "10.0.0.0", "netmask": "255.0.0.0", "gateway": "10.0.0.1\nx"}]}]}`,
			Options{MACs: map[string]string{"02:00:17:05:d1:dc": "eth0"}},
			`key "gateway": "10.0.0.1\nx": not an IP address`},
		{"Azure", AzureIMDS, `{"interface": [{"macAddress": "000D3A047598\n  up touch /tmp/PWNED", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.0.4"}]}}]}`, Options{},
			`match: key "macaddress": "000d3a047598\n  up touch /tmp/pwned": not a MAC address`},
		{"Oracle", OracleVNICs, `[{"macAddr": "02:00:17:05:d1:db\n  up touch /tmp/PWNED", "subnetCidrBlock": "10.0.0.0/24"}]`, machine,
			`key "mac_address": "02:00:17:05:d1:db\n  up touch /tmp/pwned": not a MAC address`},
		{"machine NIC name", EC2, `{"interfaces": {"macs": {"02:00:17:05:d1:dc": {"device-number": "0"}}}}`,
			Options{MACs: map[string]string{"02:00:17:05:d1:dc": "../../tmp/X"}},
			`key "set-name": "../../tmp/X": not an interface name`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := tc.parse([]byte(tc.input), tc.opts)
			if n != nil {
				t.Errorf("a network came back: %+v", n)
			}
			if !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("error %v is not ErrInvalidValue", err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error\n%s\ndoes not say\n%s", err, tc.wantErr)
			}
			checkErrorText(t, err)
		})
	}
}

// TestBenignSpellingsAccepted keeps what cloud-init accepts and renders
// harmlessly: MACs in upper case or with dashes, InfiniBand's 20 octets,
// names with dots, dashes, "@" and "+", a link-local gateway with its
// zone, search domains with "_" or a trailing dot, driver globs, the
// bond and bridge values every bond and bridge uses. (The same spellings
// go through cloud-init in netup's TestConvertMatchesCloudInit.)
func TestBenignSpellingsAccepted(t *testing.T) {
	tests := []struct {
		name  string
		parse func([]byte, Options) (*model.Network, error)
		input string
	}{
		{"v1", YAML, `version: 1
config:
  - {type: physical, name: eth0, mac_address: '52:54:00:AB:CD:EF', mtu: 9000, params: {driver: 'virtio_*'}}
  - {type: physical, name: br-lan.1, mac_address: '52-54-00-ab-cd-f0'}
  - {type: infiniband, name: ib0, mac_address: 'a0:00:02:20:fe:80:00:00:00:00:00:00:ec:0d:9a:03:00:12:34:56'}
  - {type: physical, name: 'wan@x+1', mac_address: '0000.5e00.5301'}
  - type: bond
    name: bond0
    bond_interfaces: [eth0, ib0]
    params: {bond-mode: 802.3ad, bond-xmit-hash-policy: layer3+4, bond-arp-ip-target: [10.0.0.1, 10.0.0.2], bond-miimon: 100}
    subnets:
      - {type: static, address: 10.0.0.2/24, gateway: 10.0.0.1, dns_search: [corp_ad.example.com., b.example], dns_nameservers: [10.0.0.53, 'fe80::53%bond0']}
      - {type: static6, address: 'fd00::2/64', gateway: 'fe80::1%bond0', metric: 0, mtu: 1280}
  - {type: bridge, name: br0, bridge_interfaces: [wan@x+1], params: {bridge_stp: 'on', bridge_pathcost: ['wan@x+1 10']}}
  - {type: route, destination: 0.0.0.0/0, gateway: 10.0.0.1, metric: 4294967}
  - {type: nameserver, address: [1.1.1.1], search: [example.com]}
`},
		{"v2", YAML, `network:
  version: 2
  ethernets:
    id0:
      match: {macaddress: '52:54:00:AB:CD:EF', driver: 'mlx4_*'}
      set-name: lan0
      dhcp4: true
      dhcp4-overrides: {use-domains: route, use-dns: false, hostname: h1.example, route-metric: 100}
      macaddress: '52:54:00:ab:cd:01'
  wifis:
    wlan0:
      access-points: {"my net 'home'": {password: "p$ss \"w0rd\""}}
`},
		{"network_data.json", NetworkDataJSON, `{"links": [{"id": "l0", "type": "phy", "ethernet_mac_address": "FA:16:3E:00:20:01", "mtu": 9000},
			{"id": "b", "type": "bond", "bond_links": ["l0"], "bond_mode": "active-backup", "bond_miimon": 100, "ethernet_mac_address": "fa-16-3e-00-20-02"},
			{"id": "v", "type": "vlan", "vlan_link": "b", "vlan_id": 4094, "vlan_mac_address": "fa:16:3e:00:20:03"}],
			"networks": [{"id": "n", "type": "ipv4", "link": "v", "ip_address": "10.0.0.2", "netmask": "255.255.255.0",
			  "dns_nameservers": ["10.0.0.53"], "dns_search": ["openstack.local."]}],
			"services": [{"type": "dns", "address": "fe80::1%eth0"}]}`},
		{"eni", ENI, "auto eth0\niface eth0 inet static\n    address 10.0.0.2/24\n    hwaddress ether 52:54:00:AB:CD:EF\n    dns-search a_b.example.\n    gateway 10.0.0.1\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := tc.parse([]byte(tc.input), Options{MACs: map[string]string{"fa:16:3e:00:20:01": "eth0"}})
			if err != nil {
				t.Fatal(err)
			}
			checkParsed(t, n, err)
		})
	}
}

// checkErrorText wants an error message with no control character but
// the newlines that join several errors: a value must show quoted.
func checkErrorText(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if msg := err.Error(); strings.ContainsFunc(msg, func(r rune) bool { return (r < 0x20 && r != '\n') || r == 0x7f }) {
		t.Errorf("error message holds a control character: %q", msg)
	}
}

// renderers are the four output kinds of net-convert; ENI and sysconfig
// also write the udev rules.
var renderers = []struct {
	name   string
	render func(*model.Network) (render.Files, error)
}{
	{"eni", render.ENI}, {"networkd", render.Networkd}, {"netplan", render.Netplan}, {"sysconfig", render.Sysconfig},
}

// checkParsed is the property every parser's fuzz target holds to: a
// parse that reports an invalid value returns no network; an error
// message shows no raw control character; and whatever network comes
// back renders, in every format, only lines that the format's renderer
// writes, at paths inside the output directory. A renderer refusing an
// unsafe value the parser let through fails too: the parser is the first
// line of defence and must not lean on the second.
func checkParsed(t *testing.T, n *model.Network, err error) {
	t.Helper()
	checkErrorText(t, err)
	if errors.Is(err, ErrInvalidValue) && n != nil {
		t.Errorf("a network came back beside an invalid value: %v", err)
	}
	if n == nil {
		return
	}
	if err := rendercheck.Model(n); err != nil {
		t.Errorf("the parser let a control character into the model: %v", err)
	}
	for _, r := range renderers {
		files, rerr := r.render(n)
		if errors.Is(rerr, render.ErrUnsafeValue) {
			t.Errorf("render %s refused what the parser accepted: %v", r.name, rerr)
		}
		if cerr := rendercheck.Files(files); cerr != nil {
			t.Errorf("render %s: %v", r.name, cerr)
		}
	}
}
