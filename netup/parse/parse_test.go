package parse

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/netup/model"
)

func TestYAMLDisabled(t *testing.T) {
	for _, doc := range []string{
		"network: {config: disabled}\n",
		"config: disabled\n",
	} {
		t.Run(doc, func(t *testing.T) {
			_, err := YAML([]byte(doc), Options{})
			if !errors.Is(err, ErrDisabled) {
				t.Fatalf("YAML(%q) error = %v, want ErrDisabled", doc, err)
			}
		})
	}
}

// TestBadItemsAreNamedAndSkipped checks that one bad item is reported by
// its place in the input while the other items still make it into the
// model.
func TestBadItemsAreNamedAndSkipped(t *testing.T) {
	tests := []struct {
		name      string
		parse     func([]byte, Options) (*model.Network, error)
		input     string
		wantErrs  []string
		wantIface []string
	}{
		{
			name:  "v1 unknown type and subnet without a type",
			parse: YAML,
			input: `version: 1
config:
  - type: physical
    name: eth0
    subnets: [{address: 10.0.0.3/24}, {type: dhcp}]
  - type: wormhole
    name: w0
  - type: vlan
    name: eth0.5
    vlan_link: eth0
  - type: physical
    name: eth1
`,
			wantErrs:  []string{`config[0] (physical eth0): subnets[0]: missing or non-string key "type"`, `config[1] (wormhole w0): unknown type "wormhole"`, `config[2] (vlan eth0.5): missing required key "vlan_id"`},
			wantIface: []string{"eth0", "eth1"},
		},
		{
			name:  "v1 nameserver for a missing interface",
			parse: YAML,
			input: `network:
  version: 1
  config:
    - {type: physical, name: eth0}
    - {type: nameserver, address: 1.1.1.1, interface: eth9}
`,
			wantErrs:  []string{"config[1]: nameserver specified for interface eth9", "interface eth9 does not exist"},
			wantIface: []string{"eth0"},
		},
		{
			name:  "v2 unknown bond parameter and section",
			parse: YAML,
			input: `network:
  version: 2
  tunnels: {t0: {mode: gre}}
  bonds:
    bond0:
      interfaces: [eth0]
      parameters: {mode: active-backup, colour: blue}
`,
			wantErrs:  []string{`tunnels: unsupported section`, `bonds.bond0: parameters: unknown bond parameter "colour"`},
			wantIface: []string{"bond0", "eth0"},
		},
		{
			name:  "network_data.json link without a known MAC",
			parse: NetworkDataJSON,
			input: `{"links": [
  {"id": "a", "type": "phy", "ethernet_mac_address": "fa:16:3e:00:00:01"},
  {"id": "b", "type": "phy", "ethernet_mac_address": "fa:16:3e:00:00:02"}],
 "networks": [{"id": "n", "type": "ipv4_dhcp", "link": "b"}, {"id": "m", "type": "ipv9", "link": "a"}]}`,
			wantErrs:  []string{`networks[1] (id m): unknown type "ipv9"`, "links[1] (id b): no NIC with MAC fa:16:3e:00:00:02"},
			wantIface: []string{"eth0"},
		},
		{
			name:      "ENI option outside a stanza",
			parse:     ENI,
			input:     "address 10.0.0.1\nauto eth0\niface eth0 inet dhcp\nsource /etc/network/more\n",
			wantErrs:  []string{"line 1: option \"address\" outside an iface stanza", "line 4: source is not followed"},
			wantIface: []string{"eth0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := tt.parse([]byte(tt.input), Options{MACs: map[string]string{"FA:16:3E:00:00:01": "eth0"}})
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tt.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if n == nil {
				t.Fatal("no network returned beside the error")
			}
			var names []string
			for _, iface := range n.Interfaces {
				names = append(names, iface.Name)
			}
			if diff := cmp.Diff(tt.wantIface, names); diff != "" {
				t.Errorf("interfaces (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeNet(t *testing.T) {
	tests := []struct {
		address         string
		prefix, netmask any
		wantAddr        string
		wantPrefix      int
		wantMask        string
	}{
		{"10.0.0.1/24", nil, nil, "10.0.0.1", 24, "255.255.255.0"},
		{"10.0.0.1/255.255.0.0", nil, nil, "10.0.0.1", 16, "255.255.0.0"},
		{"10.0.0.1", int64(20), nil, "10.0.0.1", 20, "255.255.240.0"},
		{"10.0.0.1", "8", nil, "10.0.0.1", 8, "255.0.0.0"},
		{"10.0.0.1", nil, "255.255.255.128", "10.0.0.1", 25, "255.255.255.128"},
		{"10.0.0.1", nil, nil, "10.0.0.1", 24, "255.255.255.0"},
		// A zero prefix counts as absent, as in cloud-init.
		{"0.0.0.0", int64(0), nil, "0.0.0.0", 24, "255.255.255.0"},
		{"0.0.0.0", nil, "0.0.0.0", "0.0.0.0", 0, "0.0.0.0"},
		{"2001:db8::1/48", nil, nil, "2001:db8::1", 48, ""},
		{"2001:db8::1", nil, "ffff:ffff:ffff:ffff::", "2001:db8::1", 64, ""},
		{"2001:db8::1", nil, nil, "2001:db8::1", 64, ""},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			addr, prefix, mask, err := normalizeNet(tt.address, tt.prefix, tt.netmask)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]any{tt.wantAddr, tt.wantPrefix, tt.wantMask}, []any{addr, prefix, mask}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"10.0.0.256", "10.0.0.1/33", "10.0.0.1/255.0.255.0", "fe80::1%eth0", "host.example"} {
		t.Run("bad "+bad, func(t *testing.T) {
			if _, _, _, err := normalizeNet(bad, nil, nil); err == nil {
				t.Errorf("normalizeNet(%q) accepted", bad)
			}
		})
	}
}

// TestV2KeepsDocumentOrder checks that v2 devices are taken in document
// order, which shows in the global DNS list as in cloud-init.
func TestV2KeepsDocumentOrder(t *testing.T) {
	doc := `network:
  version: 2
  ethernets:
    zz:
      addresses: [10.0.0.2/24]
      nameservers: {addresses: [10.0.0.53]}
    aa:
      addresses: [10.0.1.2/24]
      nameservers: {addresses: [10.0.1.53]}
`
	n, err := YAML([]byte(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"10.0.0.53", "10.0.1.53"}, n.DNS.Nameservers); diff != "" {
		t.Errorf("global nameservers (-want +got):\n%s", diff)
	}
}

// A NIC matched by MAC and renamed with set-name keeps its nameservers
// when PID 1 parses before the rename (the MAC still names eth0):
// cloud-init looks the old name up and fails; the config's name wins.
func TestV2NameserversOfARenamedNIC(t *testing.T) {
	doc := `network:
  version: 2
  ethernets:
    mgmt:
      match: {macaddress: "52:54:00:e2:e0:61"}
      set-name: mgmt0
      addresses: [10.98.0.10/24]
      nameservers: {addresses: [10.98.0.1], search: [example.net]}
`
	n, err := YAML([]byte(doc), Options{MACs: map[string]string{"52:54:00:e2:e0:61": "eth0"}})
	if err != nil {
		t.Fatal(err)
	}
	iface := n.Find("mgmt0")
	if iface == nil || iface.DNS == nil || !cmp.Equal(iface.DNS.Nameservers, []string{"10.98.0.1"}) {
		t.Fatalf("mgmt0's DNS = %+v", iface)
	}
}

// seeds returns the differential test inputs with the given suffix, as a
// fuzz seed corpus.
func seeds(f *testing.F, suffix string) {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "convert", "*"+suffix))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

func FuzzParseV1(f *testing.F) {
	seeds(f, ".yaml")
	f.Add([]byte("version: 1\nconfig:\n  - {type: bond, name: b, bond_interfaces: [x, y], params: {bond-mode: 1}}\n  - {type: bridge, name: br, bridge_interfaces: [b, z], params: {bridge_stp: 'on'}}\n"))
	f.Add([]byte("version: 1\nconfig:\n  - {type: route, destination: '::/0', gateway: '::1', metric: 0}\n"))
	for _, h := range hostileV1 {
		f.Add([]byte(h.input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := YAML(data, Options{MACs: map[string]string{"fa:16:3e:00:00:01": "eth0"}})
		checkParsed(t, n, err)
	})
}

func FuzzParseV2(f *testing.F) {
	seeds(f, ".yaml")
	f.Add([]byte("version: 2\nethernets: {e: {match: {macaddress: 'fa:16:3e:00:00:01'}, dhcp4: true, routes: [{to: 10.0.0.0/8, via: 10.0.0.1}]}}\nvlans: {v: {id: 5, link: e}}\n"))
	f.Add([]byte("network: {version: 2, bridges: {br: {interfaces: [a], parameters: {path-cost: {a: 5}}}}}\n"))
	for _, h := range hostileV2 {
		f.Add([]byte(h.input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := YAML(data, Options{MACs: map[string]string{"fa:16:3e:00:00:01": "eth0"}})
		checkParsed(t, n, err)
	})
}

func FuzzParseNetworkDataJSON(f *testing.F) {
	seeds(f, ".json")
	f.Add([]byte(`{"links":[{"id":"v","type":"vlan","vlan_link":"v","vlan_id":1}]}`))
	f.Add([]byte(`{"links":[{"id":1,"type":"bond","bond_links":[1,2]}],"networks":[{"link":1,"type":"ipv6","ip_address":"::1","netmask":"::"}]}`))
	for _, h := range hostileNetworkData {
		f.Add([]byte(h.input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := NetworkDataJSON(data, Options{MACs: map[string]string{"fa:16:3e:00:20:01": "eth0"}})
		checkParsed(t, n, err)
	})
}

func FuzzParseENI(f *testing.F) {
	seeds(f, ".eni")
	f.Add([]byte("iface eth0:1 inet static\n address 10.0.0.1\nauto eth0:1\n"))
	for _, h := range hostileENI {
		f.Add([]byte(h.input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := ENI(data, Options{})
		checkParsed(t, n, err)
	})
}
