package inventory

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// writeInventory writes files (path: content) into a new folder.
func writeInventory(t testing.TB, files map[string]string) string {
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
	return dir
}

const wafGroup = `group: waf
hostname: waf-{{ index | pad 3 }}
pools:
  mgmt: {first: 10.20.0.10, last: 10.20.250.250, prefix: 16, gateway: 10.20.0.1}
meta-data:
  public-keys: [ssh-ed25519 AAAAgroup ops]
  availability-zone: lab
user-data:
  users:
    - name: admin
      groups: [sudo]
  packages: [nginx]
  write_files:
    - path: /etc/appliance/role
      content: waf
network-config:
  version: 2
  ethernets:
    mgmt:
      match: {macaddress: "{{ mac }}"}
      set-name: mgmt
      addresses: ["{{ pool.mgmt.cidr }}"]
      gateway4: "{{ pool.mgmt.gateway }}"
`

func loadOK(t *testing.T, files map[string]string) *Inventory {
	t.Helper()
	inv, err := Load(writeInventory(t, files))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return inv
}

// An instance is its groups' settings, then its own: mappings merged at
// every depth, anything else replaced, the later winning; templates
// filled from the instance's own facts.
func TestMergeAndTemplates(t *testing.T) {
	inv := loadOK(t, map[string]string{
		"groups/waf.yaml": wafGroup,
		"groups/eu.yaml":  "group: eu\nmeta-data:\n  availability-zone: eu-1\n",
		"instances/waf-007.yaml": `instance: waf-007
groups: [waf, eu]
selectors:
  mac: 52-54-00-AA-00-07
  system-uuid: 4C4C4544-0042-3510-8052-B3C04F4D4E32
  address: 10.99.0.7
meta-data:
  public-keys: [ssh-ed25519 AAAAinstance own]
user-data:
  packages: [haproxy]
  users:
    - name: admin
      groups: [wheel]
`,
		"instances/waf-012.yml": "instance: waf-012\ngroups: [waf]\nselectors: {mac: '52:54:00:aa:00:0c', serial: CZ12}\nhostname: edge-{{ serial | lower }}\n",
	})
	if len(inv.Instances) != 2 {
		t.Fatalf("instances: %d", len(inv.Instances))
	}
	i7 := inv.Instances[0]
	if i7.Name != "waf-007" || i7.Index != 7 || i7.Hostname != "waf-007" || i7.InstanceID != "waf-007" {
		t.Errorf("waf-007: name %q index %d hostname %q instance-id %q", i7.Name, i7.Index, i7.Hostname, i7.InstanceID)
	}
	wantMeta := map[string]any{
		"instance-id":       "waf-007",
		"local-hostname":    "waf-007",
		"availability-zone": "eu-1",                                // the later group wins
		"public-keys":       []any{"ssh-ed25519 AAAAinstance own"}, // a list is replaced
	}
	if diff := cmp.Diff(wantMeta, i7.MetaData); diff != "" {
		t.Errorf("meta-data (-want +got):\n%s", diff)
	}
	ud, err := yaml11.Load(i7.UserData)
	if err != nil || !strings.HasPrefix(string(i7.UserData), "#cloud-config\n") {
		t.Fatalf("user-data %q: %v", i7.UserData, err)
	}
	wantUD := map[string]any{
		"packages":    []any{"haproxy"},
		"users":       []any{map[string]any{"name": "admin", "groups": []any{"wheel"}}},
		"write_files": []any{map[string]any{"path": "/etc/appliance/role", "content": "waf"}},
	}
	if diff := cmp.Diff(wantUD, ud); diff != "" {
		t.Errorf("user-data (-want +got):\n%s", diff)
	}
	nc, _ := yaml11.Load(i7.NetworkConfig)
	wantNC := map[string]any{"version": int64(2), "ethernets": map[string]any{"mgmt": map[string]any{
		"match": map[string]any{"macaddress": "52:54:00:aa:00:07"}, "set-name": "mgmt",
		"addresses": []any{"10.20.0.16/16"}, "gateway4": "10.20.0.1",
	}}}
	if diff := cmp.Diff(wantNC, nc); diff != "" {
		t.Errorf("network-config (-want +got):\n%s", diff)
	}
	i12 := inv.Instances[1]
	if i12.Hostname != "edge-cz12" || i12.MetaData["local-hostname"] != "edge-cz12" {
		t.Errorf("waf-012's own hostname template: %q, meta-data %v", i12.Hostname, i12.MetaData["local-hostname"])
	}
	// The group's document is not changed by an instance's merge.
	ud12, _ := yaml11.Load(i12.UserData)
	if got := ud12.(map[string]any)["packages"]; !cmp.Equal(got, []any{"nginx"}) {
		t.Errorf("waf-012 packages = %v: an instance's merge leaked into its group", got)
	}
}

func TestLookup(t *testing.T) {
	inv := loadOK(t, map[string]string{
		"a.yaml": "instance: a1\nselectors: {mac: 52:54:00:00:00:01, system-uuid: 4c4c4544-0042-3510-8052-b3c04f4d4e32, serial: SER-1, address: 10.0.0.0/24}\n",
		"b.yaml": "instance: b1\nmeta-data: {instance-id: iid-b}\nselectors: {address: 10.0.0.9}\n",
		"c.yaml": "instance: c1\nselectors: {address: [10.0.0.0/16, 'fd00::5']}\n",
		// Unquoted, YAML 1.1 reads these as numbers; a selector means
		// the text.
		"d.yaml":      "instance: d1\nselectors: {serial: 0123, mac: [52:54:00:00:00:02]}\n",
		"README":      "not YAML, not read",
		".x.yaml":     "not: an inventory file",
		".git/x.yaml": "neither",
	})
	for _, tc := range []struct{ sel, want, kind string }{
		{"a1", "a1", "name"},
		{"iid-b", "b1", "instance-id"},
		{"4C4C4544-0042-3510-8052-B3C04F4D4E32", "a1", "system-uuid"},
		{"52-54-00-00-00-01", "a1", "mac"},
		{"SER-1", "a1", "serial"},
		{"0123", "d1", "serial"},
		{"52:54:00:00:00:02", "d1", "mac"},
	} {
		inst, kind, ok := inv.Lookup(tc.sel)
		if !ok || inst.Name != tc.want || kind != tc.kind {
			t.Errorf("Lookup(%q) = %v %q %v, want %s by %s", tc.sel, inst, kind, ok, tc.want, tc.kind)
		}
	}
	if inst, _, ok := inv.Lookup("ser-1"); ok {
		t.Errorf("a serial is compared as written: ser-1 found %s", inst.Name)
	}
	for addr, want := range map[string]string{"10.0.0.9": "b1", "10.0.0.10": "a1", "10.0.7.1": "c1", "::ffff:10.0.0.9": "b1", "fd00::5": "c1", "10.1.0.1": ""} {
		inst, ok := inv.ByAddress(netip.MustParseAddr(addr))
		got := ""
		if ok {
			got = inst.Name
		}
		if got != want {
			t.Errorf("ByAddress(%s) = %q, want %q (the longest prefix)", addr, got, want)
		}
	}
}

// Every problem names its file, line and key, and the instance when a
// group's setting fails for it; all are reported, not the first.
func TestProblemsNameFileLineKey(t *testing.T) {
	dir := writeInventory(t, map[string]string{
		"groups/waf.yaml": "group: waf\nhostname: waf-{{ index }}\nuser-data:\n  packages: [a]\n  runcmd: 5\n",
		"groups/bad.yaml": "group: bad\nhostname: x-{{ mac | shout }}\n",
		"i/noindex.yaml":  "instance: noindex\ngroups: [waf]\n",
		"i/waf-2.yaml":    "instance: waf-2\ngroups: [waf, nosuch]\nselectors:\n  mac: not-a-mac\n  colour: blue\n",
		"i/text.yaml":     "instance: text-1\nuser-data: |\n  #cloud-config\n  packages: [a]\n  ssh_pwauth: [1]\n",
		"i/typo.yaml":     "instance: typo-1\nmeta-data: {instance-id: t}\nuserdata: {}\n",
		"i/pool.yaml":     "instance: p-300\npools: {p: {first: 10.0.0.1, last: 10.0.0.9}}\nhostname: '{{ pool.p }}'\n",
		"broken.yaml":     "instance: [\n",
	})
	_, err := Load(dir)
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Load error = %v, want Problems", err)
	}
	got := strings.Split(ps.Error(), "\n")
	want := []string{
		`broken.yaml:2: not YAML:`,
		`groups/bad.yaml:2: hostname: {{ mac | shout }}: unknown filter "shout"`,
		`groups/waf.yaml:2: hostname: {{ index }}: the instance has none: give it index: N, or end its name in digits (instance noindex)`,
		`groups/waf.yaml:5: user-data.runcmd: 5 is not of type 'array' (instance noindex and 1 more)`,
		`i/pool.yaml:3: hostname: {{ pool.p }}: pool p (10.0.0.1 to 10.0.0.9) has no address for index 300`,
		`i/text.yaml:2: user-data: line 3 of the text (about line 5 of the file): ssh_pwauth: [1] is not valid under any of the given schemas`,
		`i/typo.yaml:3: userdata: unknown key: want one of instance, description, groups, index, selectors, hostname, pools, meta-data, user-data, vendor-data, network-config`,
		`i/waf-2.yaml:2: groups.1: no group "nosuch" in the inventory`,
		`i/waf-2.yaml:4: selectors.mac: `,
		`i/waf-2.yaml:5: selectors.colour: unknown selector`,
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			if strings.HasPrefix(g, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem starting %q in:\n%s", w, ps.Error())
		}
	}
}

// What two instances share would serve one's seed to the other.
func TestCollisions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"mac", map[string]string{
			"a.yaml": "instance: a\nselectors: {mac: 52:54:00:00:00:01}\n",
			"b.yaml": "instance: b\nselectors: {mac: '52-54-00-00-00-01'}\n",
		}, "mac 52:54:00:00:00:01 is also a's"},
		{"address", map[string]string{
			"a.yaml": "instance: a\nselectors: {address: 10.0.0.0/24}\n",
			"b.yaml": "instance: b\nselectors: {address: 10.0.0.0/24}\n",
		}, "10.0.0.0/24 is also a's"},
		{"serial is another's name", map[string]string{
			"a.yaml": "instance: a\n",
			"b.yaml": "instance: b\nselectors: {serial: a}\n",
		}, `"a" selects a and b in a URL (as name and serial)`},
		{"pool address", map[string]string{
			"g.yaml": "group: g\npools: {p: {first: 10.0.0.1}}\nmeta-data: {addr: '{{ pool.p }}'}\n",
			"a.yaml": "instance: a-1\ngroups: [g]\n",
			"b.yaml": "instance: b-01\ngroups: [g]\n",
		}, "pool p gives 10.0.0.1 to both"},
		{"hostname", map[string]string{
			"a.yaml": "instance: a\nhostname: same\n",
			"b.yaml": "instance: b\nhostname: same\n",
		}, "hostname same is also a's"},
		{"instance-id", map[string]string{
			"a.yaml": "instance: a\nmeta-data: {instance-id: x}\n",
			"b.yaml": "instance: b\nmeta-data: {instance-id: x}\n",
		}, "instance-id x is also a's"},
		{"name", map[string]string{
			"a.yaml": "instance: a\n",
			"b.yaml": "instance: a\n",
		}, "instance a is also defined in a.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeInventory(t, tc.files))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load error = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// A jinja user-data is cloud-init's to render on the instance; a text
// cloud-config is filled.
func TestTextUserData(t *testing.T) {
	inv := loadOK(t, map[string]string{
		"a.yaml": "instance: a-1\nuser-data: |\n  ## template: jinja\n  #cloud-config\n  hostname: {{ v1.local_hostname }}\n",
		"b.yaml": "instance: b-1\nvendor-data: |\n  #cloud-config\n  hostname: b{{ index }}\n",
	})
	a, _ := inv.Instance("a-1")
	if !strings.Contains(string(a.UserData), "{{ v1.local_hostname }}") {
		t.Errorf("jinja user-data was changed: %q", a.UserData)
	}
	b, _ := inv.Instance("b-1")
	if string(b.VendorData) != "#cloud-config\nhostname: b1\n" || b.UserData != nil {
		t.Errorf("b-1: vendor-data %q, user-data %q", b.VendorData, b.UserData)
	}
}

// LoadFS (an inventory kept in a database) reads what Load reads of a
// folder, passes over the same names, and finds the same problems.
func TestLoadFS(t *testing.T) {
	files := map[string]string{
		"groups/waf.yaml":        wafGroup,
		"instances/waf-001.yaml": "instance: waf-001\ngroups: [waf]\nselectors: {mac: 52:54:00:00:00:01}\n",
		"instances/.draft.yaml":  "not: an inventory file\n",
		".git/config.yaml":       "neither\n",
		"README.md":              "# the lab\n",
		"instances/waf-002.yml":  "instance: waf-002\ngroups: [waf]\nselectors: {mac: 52:54:00:00:00:02}\n",
	}
	mfs := fstest.MapFS{}
	for p, c := range files {
		mfs[p] = &fstest.MapFile{Data: []byte(c)}
	}
	fromDir := loadOK(t, files)
	fromFS, err := LoadFS(mfs, "generation 1")
	if err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	if len(fromFS.Instances) != 2 || fromFS.Dir != "generation 1" {
		t.Fatalf("LoadFS: %d instances, dir %q", len(fromFS.Instances), fromFS.Dir)
	}
	for i, inst := range fromDir.Instances {
		got := fromFS.Instances[i]
		if inst.Name != got.Name || string(inst.UserData) != string(got.UserData) || string(inst.NetworkConfig) != string(got.NetworkConfig) {
			t.Errorf("%s: LoadFS differs from Load", inst.Name)
		}
	}
	for p, want := range map[string]bool{"groups/waf.yaml": true, "a.yml": true, ".git/x.yaml": false, "instances/.draft.yaml": false, "README.md": false} {
		if IsInventoryFile(p) != want {
			t.Errorf("IsInventoryFile(%q) = %v", p, !want)
		}
	}
	mfs["instances/waf-003.yaml"] = &fstest.MapFile{Data: []byte("instance: waf-003\ngroups: [nope]\n")}
	var problems Problems
	if _, err := LoadFS(mfs, "generation 2"); !errors.As(err, &problems) || problems[0].File != "instances/waf-003.yaml" || problems[0].Line != 2 {
		t.Errorf("LoadFS of a broken inventory: %v", err)
	}
}
