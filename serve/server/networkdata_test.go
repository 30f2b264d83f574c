package server

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/netup"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// network_data.json made from a v2 config is the same network: seedinit's
// own parsers read both into the model, and the ENI both render to is
// the same file.
func TestNetworkDataJSON(t *testing.T) {
	for name, v2 := range map[string]string{
		"static": `version: 2
ethernets:
  mgmt:
    match: {macaddress: "52:54:00:00:00:01"}
    set-name: mgmt
    mtu: 9000
    addresses: [10.20.0.7/24, "2001:db8::7/64"]
    gateway4: 10.20.0.1
    routes: [{to: 192.168.0.0/16, via: 10.20.0.254}]
    nameservers: {addresses: [10.20.0.2]}
  data:
    match: {macaddress: "52:54:00:00:01:01"}
    set-name: data
    dhcp4: true
`,
		"dhcp": `network:
  version: 2
  ethernets:
    eth0:
      match: {macaddress: "52:54:00:00:00:01"}
      dhcp4: true
`,
	} {
		t.Run(name, func(t *testing.T) {
			doc, err := yaml11.Load([]byte(v2))
			if err != nil {
				t.Fatal(err)
			}
			ndj, err := networkDataJSON(doc.(map[string]any))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s", ndj)
			macs := []netup.MAC{{Name: "mgmt", Address: "52:54:00:00:00:01"}, {Name: "data", Address: "52:54:00:00:01:01"}}
			if name == "dhcp" {
				macs = []netup.MAC{{Name: "eth0", Address: "52:54:00:00:00:01"}}
			}
			want, err := netup.Convert([]byte(v2), netup.KindYAML, netup.OutputENI, macs)
			if err != nil {
				t.Fatal(err)
			}
			got, err := netup.Convert(ndj, netup.KindNetworkDataJSON, netup.OutputENI, macs)
			if err != nil {
				t.Fatal(err)
			}
			if name == "dhcp" {
				if d := cmp.Diff(stringsOf(want), stringsOf(got)); d != "" {
					t.Errorf("ENI of v2 (-) and of network_data.json (+):\n%s", d)
				}
				return
			}
			// network_data.json says the default gateway as a route and
			// the name servers for the machine, not a NIC (cloud-init's
			// convert_net_json): the same network, written otherwise.
			var all strings.Builder
			for _, f := range stringsOf(got) {
				all.WriteString(f)
			}
			for _, line := range []string{
				"iface data inet dhcp", "iface mgmt inet static", "address 10.20.0.7/24", "mtu 9000",
				"route add default gw 10.20.0.1", "route add -net 192.168.0.0/16 gw 10.20.0.254",
				"inet6 static", "address 2001:db8::7/64", "10.20.0.2",
				`ATTR{address}=="52:54:00:00:00:01", NAME="mgmt"`,
			} {
				if !strings.Contains(all.String(), line) {
					t.Errorf("network_data.json's ENI lacks %q:\n%s", line, all.String())
				}
			}
		})
	}
	for _, bad := range []string{
		"version: 1\nconfig: []\n",
		"version: 2\nethernets: {eth0: {dhcp4: true}}\n",
		"version: 2\nethernets: {eth0: {match: {macaddress: '52:54:00:00:00:01'}}}\nbonds: {bond0: {}}\n",
		"version: 2\nethernets: {eth0: {match: {macaddress: '52:54:00:00:00:01'}, dhcp4: true, gateway4: 10.0.0.1}}\n",
	} {
		doc, _ := yaml11.Load([]byte(bad))
		if b, err := networkDataJSON(doc.(map[string]any)); err == nil {
			t.Errorf("%q converted: %s", bad, b)
		}
	}
}

func stringsOf(files map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[k] = string(v)
	}
	return out
}
