package export

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/sshkey"
	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/netup/parse"
	"github.com/seedinit/seedinit/netup/render"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds"
	"github.com/seedinit/seedinit/seed/trust"
	"github.com/seedinit/seedinit/serve/inventory"
)

// fleet is a small inventory: a group with a static management network
// and two instances known by MAC and system UUID.
var fleet = map[string]string{
	"groups/waf.yaml": `group: waf
hostname: waf-{{ index | pad 3 }}
meta-data:
  public-keys: [ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGroupKey ops]
user-data:
  packages: [nginx]
vendor-data: "#cloud-config\nruncmd: [echo vendor]\n"
network-config:
  version: 2
  ethernets:
    mgmt:
      match: {macaddress: "{{ mac }}"}
      set-name: mgmt
      addresses: ["10.20.0.{{ index }}/24"]
      gateway4: 10.20.0.1
      nameservers: {addresses: [10.20.0.2]}
`,
	"instances/waf-007.yaml": `instance: waf-007
groups: [waf]
selectors:
  mac: 52:54:00:00:00:07
  system-uuid: 4c4c4544-0042-3510-8052-b3c04f4d4e07
`,
	"instances/waf-008.yaml": `instance: waf-008
groups: [waf]
selectors:
  mac: 52:54:00:00:00:08
  system-uuid: 4c4c4544-0042-3510-8052-b3c04f4d4e08
`,
}

func loadFleet(t *testing.T, files map[string]string) *inventory.Inventory {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inv, err := inventory.Load(dir)
	if err != nil {
		t.Fatalf("load the inventory: %v", err)
	}
	return inv
}

func newKey(t *testing.T) (ed25519.PrivateKey, trust.Keys) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := sshkey.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := trust.ParseKeys(sshkey.MarshalAuthorizedKey(pub, "fleet"), "test key")
	if err != nil {
		t.Fatal(err)
	}
	return priv, keys
}

// readBack reads an image as seedinit does at first boot: the local
// datasources over the image as a block device, never mounted.
func readBack(t *testing.T, img string) *seed.Seed {
	t.Helper()
	env := &ds.Env{Devices: ds.FileDevices{"/dev/sr0": img}}
	res, err := ds.DetectStage(context.Background(), env, 0, ds.StageLocal)
	if err != nil || res.Seed == nil {
		t.Fatalf("read %s back: %v", img, err)
	}
	return res.Seed
}

// eni renders a network config as ENI: two inputs describe the same
// network when they render the same file.
func eni(t *testing.T, data []byte, format string) string {
	t.Helper()
	var n *model.Network
	var err error
	if format == "network_data.json" {
		n, err = parse.NetworkDataJSON(data, parse.Options{})
	} else {
		n, err = parse.YAML(data, parse.Options{})
	}
	if err != nil {
		t.Fatalf("parse %s %q: %v", format, data, err)
	}
	out, err := render.ENIContent(n)
	if err != nil {
		t.Fatalf("render %s: %v", format, err)
	}
	return sameBondSpelling(out)
}

// sameBondSpelling writes bond options as bond-mode: network_data.json
// spells them bond_mode, and cloud-init releases differ in whether they
// translate it; ifupdown reads both as the same option.
// Each stanza's options are sorted: where the bond's own options go in
// its stanza differs too, and ifupdown does not care.
func sameBondSpelling(eni string) string {
	eni = regexp.MustCompile(`(?m)^(\s+)bond_([a-z_]+)`).ReplaceAllStringFunc(eni, func(s string) string {
		return strings.ReplaceAll(s, "_", "-")
	})
	stanzas := strings.Split(strings.TrimSpace(eni), "\n\n")
	for i, st := range stanzas {
		lines := strings.Split(st, "\n")
		slices.Sort(lines[1:])
		stanzas[i] = strings.Join(lines, "\n")
	}
	return strings.Join(stanzas, "\n\n")
}

// Each instance's image, read back by seedinit's own disk readers, holds
// that instance's parts; signed, it is taken whole under require on that
// machine and refused on the other instance's.
func TestExportReadBack(t *testing.T) {
	key, keys := newKey(t)
	for _, format := range []Format{ISO, VFAT, ConfigDrive} {
		t.Run(string(format), func(t *testing.T) {
			inv := loadFleet(t, fleet)
			if format == ConfigDrive {
				// See TestExportSignedConfigDriveVendorData.
				for _, inst := range inv.Instances {
					inst.VendorData = nil
				}
			}
			dir := t.TempDir()
			results, err := Export(context.Background(), inv, dir, Options{Format: format, Key: key, ValidFor: time.Hour})
			if err != nil {
				t.Fatalf("Export: %v", err)
			}
			if len(results) != 2 {
				t.Fatalf("results: %+v", results)
			}
			for i, inst := range inv.Instances {
				want := filepath.Join(dir, format.FileName(inst.Name))
				if results[i].Path != want {
					t.Errorf("%s: written to %q, want %q", inst.Name, results[i].Path, want)
				}
				s := readBack(t, want)
				if s.InstanceID != inst.InstanceID || s.LocalHostname != inst.Hostname {
					t.Errorf("%s: read back instance-id %q hostname %q, want %q %q", inst.Name, s.InstanceID, s.LocalHostname, inst.InstanceID, inst.Hostname)
				}
				if diff := cmp.Diff([]string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGroupKey ops"}, s.PublicKeys); diff != "" {
					t.Errorf("%s: public keys (-want +got):\n%s", inst.Name, diff)
				}
				if string(s.UserData) != string(inst.UserData) {
					t.Errorf("%s: user-data %q, want %q", inst.Name, s.UserData, inst.UserData)
				}
				if string(s.VendorData) != string(inst.VendorData) {
					t.Errorf("%s: vendor-data %q, want %q", inst.Name, s.VendorData, inst.VendorData)
				}
				wantNet := eni(t, inst.NetworkConfig, "yaml")
				if got := eni(t, s.NetworkConfig, s.NetworkFormat); got != wantNet {
					t.Errorf("%s: network read back as %s renders\n%s\nwant\n%s", inst.Name, s.NetworkFormat, got, wantNet)
				}
				anchor := trust.Anchor{Policy: trust.Require, Keys: keys}
				own := trust.Facts{SystemUUID: inst.SystemUUIDs[0], MACs: inst.MACs, Now: time.Now()}
				if _, d := trust.Decide(s, anchor, own); d.Refused() || d.SignedBy == "" {
					t.Errorf("%s: refused on its own machine: %+v", inst.Name, d)
				}
				other := inv.Instances[1-i]
				theirs := trust.Facts{SystemUUID: other.SystemUUIDs[0], MACs: other.MACs, Now: time.Now()}
				if _, d := trust.Decide(s, anchor, theirs); !d.Refused() {
					t.Errorf("%s: taken on %s's machine: %+v", inst.Name, other.Name, d)
				}
			}
		})
	}
}

// A run again converges: the same images, nothing else in the folder
// (no temporary file left beside them).
func TestExportAgain(t *testing.T) {
	inv := loadFleet(t, fleet)
	dir := t.TempDir()
	for range 2 {
		if _, err := Export(context.Background(), inv, dir, Options{Format: ISO}); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"waf-007.iso", "waf-008.iso"}, names); diff != "" {
		t.Errorf("folder after two runs (-want +got):\n%s", diff)
	}
}

// An instance whose network has no config drive form fails alone: the
// other's image is written, and the error names the failing instance.
func TestExportOneFails(t *testing.T) {
	files := map[string]string{}
	for k, v := range fleet {
		files[k] = v
	}
	files["instances/waf-008.yaml"] += `network-config:
  version: 2
  ethernets:
    eth0: {dhcp4: true}
  bridges:
    br0: {interfaces: [eth0], dhcp4: true}
`
	inv := loadFleet(t, files)
	dir := t.TempDir()
	results, err := Export(context.Background(), inv, dir, Options{Format: ConfigDrive})
	if err == nil || !strings.Contains(err.Error(), "waf-008") || !strings.Contains(err.Error(), "br0") {
		t.Fatalf("Export: %v, want waf-008's bridge named", err)
	}
	if results[0].Err != nil || results[1].Err == nil {
		t.Errorf("results: %+v", results)
	}
	if _, err := os.Stat(filepath.Join(dir, "waf-007.config-2.iso")); err != nil {
		t.Errorf("waf-007's image: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "waf-008.config-2.iso")); err == nil {
		t.Error("waf-008's image written although it failed")
	}
}

// The network_data.json written for a config drive reads back, through
// cloud-init's convert_net_json rules (netup/parse), as the network the
// inventory gave, for the shapes appliances use.
func TestNetworkDataJSON(t *testing.T) {
	for name, config := range networkShapes {
		t.Run(name, func(t *testing.T) {
			b, err := networkDataJSON([]byte(config))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := eni(t, b, "network_data.json"), eni(t, []byte(config), "yaml"); got != want {
				t.Errorf("network_data.json %s renders\n%s\nwant\n%s", b, got, want)
			}
		})
	}
}

// networkShapes are the network configs appliances use, by name.
var networkShapes = map[string]string{
	// network_data.json's ipv6_dhcp always accepts router
	// advertisements.
	"dhcp":   "version: 2\nethernets:\n  eth0: {dhcp4: true, dhcp6: true, accept-ra: true}\n",
	"static": "version: 1\nconfig:\n- type: physical\n  name: eth0\n  mac_address: '52:54:00:00:00:01'\n  mtu: 9000\n  subnets:\n  - {type: static, address: 10.0.0.5/24, gateway: 10.0.0.1, dns_nameservers: [10.0.0.2], routes: [{network: 10.9.0.0, prefix: 16, gateway: 10.0.0.254}]}\n  - {type: static6, address: '2001:db8::5/64'}\n- {type: nameserver, address: [1.1.1.1]}\n",
	"vlan":   "version: 1\nconfig:\n- {type: physical, name: eth0, mac_address: '52:54:00:00:00:02'}\n- {type: vlan, name: eth0.100, vlan_link: eth0, vlan_id: 100, mac_address: '52:54:00:00:00:02', subnets: [{type: static, address: 192.168.100.5/24}]}\n",
	"bond":   "version: 1\nconfig:\n- {type: physical, name: eth0, mac_address: '52:54:00:00:00:03'}\n- {type: physical, name: eth1, mac_address: '52:54:00:00:00:04'}\n- {type: bond, name: bond0, bond_interfaces: [eth0, eth1], params: {bond-mode: active-backup}, subnets: [{type: dhcp4}]}\n",
}

// A signed config drive cannot carry vendor-data that the appliance would
// take under require: the export says so rather than write an image whose
// vendor-data is dropped at boot.
func TestExportSignedConfigDriveVendorData(t *testing.T) {
	inv := loadFleet(t, fleet)
	key, _ := newKey(t)
	_, err := Export(context.Background(), inv, t.TempDir(), Options{Format: ConfigDrive, Key: key})
	if err == nil || !strings.Contains(err.Error(), "vendor-data on a signed config drive") {
		t.Errorf("Export: %v", err)
	}
}

// What network_data.json cannot say, or cloud-init would read otherwise,
// is refused with the interface named, never dropped.
func TestNetworkDataJSONRefuses(t *testing.T) {
	for config, want := range map[string]string{
		"version: 2\nethernets:\n  eth0: {}\nbridges:\n  br0: {interfaces: [eth0], dhcp4: true}\n":                                          "interface br0: a bridge",
		"version: 2\nethernets:\n  eth0: {match: {macaddress: '52:54:00:00:00:01'}, set-name: eth0}\nvlans:\n  mgmt: {id: 5, link: eth0}\n": "interface mgmt: a VLAN on a config drive is named eth0.5",
		"version: 2\nethernets:\n  eth0: {}\nvlans:\n  eth0.5: {id: 5, link: eth0}\n":                                                       "interface eth0.5: cloud-init needs a VLAN's MAC",
		"version: 1\nconfig:\n- {type: physical, name: eth0}\n- {type: nameserver, address: [10.0.0.2], search: [lab]}\n":                   "global DNS search list",
		"version: 1\nconfig:\n- {type: physical, name: eth0}\n- {type: route, destination: 10.9.0.0/16, gateway: 10.0.0.1}\n":               "routes outside any subnet",
	} {
		if _, err := networkDataJSON([]byte(config)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", config, err, want)
		}
	}
}
