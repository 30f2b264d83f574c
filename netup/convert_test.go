package netup

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/yaml11"

	"github.com/seedinit/seedinit/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// convertCase is one input of testdata/convert, with the NICs the machine
// is said to have (net-convert's --mac) and where seedinit deliberately
// renders something other than cloud-init.
type convertCase struct {
	file string
	kind string
	macs []MAC
	// differs maps "output kind" or "output kind:path" to the reason
	// seedinit's output is not compared with cloud-init's there.
	differs map[string]string
}

var convertCases = []convertCase{
	{file: "v1-dhcp.yaml", kind: KindYAML},
	{file: "v1-static4.yaml", kind: KindYAML},
	{file: "v1-dual-stack.yaml", kind: KindYAML},
	{file: "v1-multi-nic-mtu.yaml", kind: KindYAML},
	{file: "v1-routes.yaml", kind: KindYAML},
	{file: "v1-dns-interface.yaml", kind: KindYAML, differs: map[string]string{
		"eni": "cloud-init writes eth1's own DNS as \"dns {'addresses': [...]}\", a Python dict ifupdown cannot read; seedinit leaves the line out",
	}},
	{file: "v1-bond-8023ad.yaml", kind: KindYAML},
	{file: "v1-bond-active-backup.yaml", kind: KindYAML},
	{file: "v1-bond-arp.yaml", kind: KindYAML},
	{file: "v1-vlan.yaml", kind: KindYAML},
	{file: "v1-vlan-on-bond.yaml", kind: KindYAML},
	{file: "v1-bridge.yaml", kind: KindYAML},
	{file: "v1-bridge-costs.yaml", kind: KindYAML},
	{file: "v1-ipv6-modes.yaml", kind: KindYAML},
	{file: "v1-accept-ra-wol.yaml", kind: KindYAML},
	{file: "v1-manual.yaml", kind: KindYAML},
	{file: "v2-dhcp-setname.yaml", kind: KindYAML},
	{file: "v2-static.yaml", kind: KindYAML, differs: map[string]string{
		"eni": "cloud-init writes eth0's own DNS as \"dns {'nameservers': [...]}\", a Python dict ifupdown cannot read; seedinit leaves the line out",
	}},
	{file: "v2-bond.yaml", kind: KindYAML, differs: map[string]string{
		"eni": "cloud-init writes bond0's own DNS as a Python dict line; seedinit leaves it out",
	}},
	{file: "v2-bridge-vlan.yaml", kind: KindYAML},
	{file: "v2-dhcp-overrides.yaml", kind: KindYAML},
	{file: "v2-match-no-setname.yaml", kind: KindYAML, differs: map[string]string{
		"eni": "cloud-init writes wan's own DNS as a Python dict line; seedinit leaves it out",
	}},
	{file: "v1-benign-spellings.yaml", kind: KindYAML},
	{file: "v2-benign-spellings.yaml", kind: KindYAML, differs: map[string]string{
		"eni": "cloud-init writes eth1's own DNS as a Python dict line; seedinit leaves it out",
	}},
	{file: "eni-basic.eni", kind: KindENI},
	{file: "nd-phy-vlan.json", kind: KindNetworkDataJSON, macs: []MAC{{Name: "eth0", Address: "fa:16:3e:00:20:01"}}},
	{file: "nd-bond.json", kind: KindNetworkDataJSON, macs: []MAC{{Name: "ens3", Address: "fa:16:3e:00:21:01"}, {Name: "ens4", Address: "fa:16:3e:00:21:02"}}},
	{file: "nd-ipv6.json", kind: KindNetworkDataJSON, macs: []MAC{
		{Name: "eth0", Address: "fa:16:3e:00:22:01"}, {Name: "eth1", Address: "fa:16:3e:00:22:02"}, {Name: "eth2", Address: "fa:16:3e:00:22:03"},
		{Name: "eth3", Address: "fa:16:3e:00:22:04"}, {Name: "eth4", Address: "fa:16:3e:00:22:05"}}},
	{file: "nd-named-links.json", kind: KindNetworkDataJSON, macs: []MAC{{Name: "ens5", Address: "fa:16:3e:00:23:03"}}},
	{file: "nd-bond-vlan.json", kind: KindNetworkDataJSON, macs: []MAC{{Name: "eth0", Address: "fa:16:3e:00:24:01"}, {Name: "eth1", Address: "fa:16:3e:00:24:02"}}},
}

var diffOutputs = []string{OutputENI, OutputNetworkd, OutputNetplan, OutputSysconfig}

func readCase(t testing.TB, c convertCase) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "convert", c.file))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestConvertGolden pins seedinit's output for every input and output
// kind; `go test ./netup -run Golden -update` rewrites the files.
func TestConvertGolden(t *testing.T) {
	for _, c := range convertCases {
		for _, out := range append(diffOutputs, OutputJSON) {
			t.Run(c.file+"/"+out, func(t *testing.T) {
				files, err := Convert(readCase(t, c), c.kind, out, c.macs)
				if err != nil {
					t.Fatalf("Convert: %v", err)
				}
				got := joinFiles(files)
				golden := filepath.Join("testdata", "golden", c.file+"."+out)
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("read golden file (run with -update to create it): %v", err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("output differs from %s (-want +got):\n%s", golden, diff)
				}
			})
		}
	}
}

func joinFiles(files map[string][]byte) string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, "==> %s <==\n%s", p, files[p])
		if len(files[p]) > 0 && !bytes.HasSuffix(files[p], []byte("\n")) {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// cloudInit returns the path of cloud-init, or skips the test.
func cloudInit(t testing.TB) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Skip(t, "cloud-init oracle unavailable: /usr/bin/python3 not found")
	}
	if err := exec.Command(py, "-c", "import cloudinit").Run(); err != nil {
		testenv.Skip(t, "cloud-init oracle unavailable: /usr/bin/python3 cannot import cloudinit (install Debian's cloud-init package)")
	}
	bin, err := exec.LookPath("/usr/bin/cloud-init")
	if err != nil {
		testenv.Skip(t, "cloud-init oracle unavailable: /usr/bin/cloud-init not found")
	}
	return bin
}

// netConvert runs `cloud-init devel net-convert` and returns the files it
// wrote, keyed by path relative to its output directory.
func netConvert(t *testing.T, bin string, c convertCase, out string) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	distro := "debian"
	if out == OutputSysconfig {
		distro = "centos"
	}
	args := []string{"devel", "net-convert", "-p", filepath.Join("testdata", "convert", c.file),
		"-k", c.kind, "-d", dir, "-D", distro, "-O", out}
	for _, m := range c.macs {
		args = append(args, "--mac", m.Name+","+m.Address)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "LANG=C.UTF-8")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cloud-init %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestConvertMatchesCloudInit renders every input with seedinit and with
// cloud-init 22.4.2's net-convert and compares the results semantically.
func TestConvertMatchesCloudInit(t *testing.T) {
	bin := cloudInit(t)
	for _, c := range convertCases {
		for _, out := range diffOutputs {
			t.Run(c.file+"/"+out, func(t *testing.T) {
				if reason, ok := c.differs[out]; ok {
					testenv.SkipOptional(t, "seedinit deliberately differs: ", reason)
				}
				want := netConvert(t, bin, c, out)
				got, err := Convert(readCase(t, c), c.kind, out, c.macs)
				if err != nil {
					t.Fatalf("Convert: %v", err)
				}
				if out == OutputNetworkd {
					// cloud-init 22.4.2 writes no .netdev files; ours and
					// the lines that tie links to them are compared with
					// netplan's in TestNetworkdNetdevsMatchNetplan.
					got = withoutNetdevs(got)
				}
				if diff := cmp.Diff(sortedPaths(want), sortedPaths(got)); diff != "" {
					t.Errorf("file sets differ (-cloud-init +seedinit):\n%s", diff)
				}
				for path, wantData := range want {
					gotData, ok := got[path]
					if !ok {
						continue
					}
					if reason, ok := c.differs[out+":"+path]; ok {
						t.Logf("%s: not compared, seedinit deliberately differs: %s", path, reason)
						continue
					}
					w, g := normalize(t, out, path, wantData), normalize(t, out, path, gotData)
					if diff := cmp.Diff(w, g); diff != "" {
						t.Errorf("%s differs (-cloud-init +seedinit):\n%s\ncloud-init wrote:\n%s\nseedinit wrote:\n%s", path, diff, wantData, gotData)
					}
				}
			})
		}
	}
}

func sortedPaths(files map[string][]byte) []string {
	out := make([]string, 0, len(files))
	for p := range files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// normalize turns a rendered file into a value that compares equal when
// the files mean the same: ENI stanzas and networkd sections as sorted
// sets of lines, netplan as decoded YAML, sysconfig and the rest as
// sorted lines. Comments and blank lines do not count.
func normalize(t *testing.T, out, path string, data []byte) any {
	t.Helper()
	switch {
	case out == OutputNetplan:
		v, err := yaml11.Load(data)
		if err != nil {
			t.Fatalf("decode %s: %v\n%s", path, err, data)
		}
		return v
	case out == OutputENI && strings.HasSuffix(path, "50-cloud-init"):
		return normalizeENI(string(data))
	case out == OutputNetworkd:
		return normalizeNetworkd(string(data))
	}
	return sortedLines(string(data))
}

var spaces = regexp.MustCompile(`\s+`)

func sortedLines(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(spaces.ReplaceAllString(line, " "))
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}

// normalizeENI splits the file into stanzas (an "auto"/"allow-" line or a
// comment line starts one, as does "iface" after options) and returns each
// as its sorted lines, the stanzas sorted.
func normalizeENI(s string) []string {
	var stanzas []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			sort.Strings(cur)
			stanzas = append(stanzas, strings.Join(cur, " | "))
			cur = nil
		}
	}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(spaces.ReplaceAllString(line, " "))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "auto ") || strings.HasPrefix(line, "allow-") ||
			(strings.HasPrefix(line, "iface ") && !stanzaOpenedBy(cur)) {
			flush()
		}
		cur = append(cur, line)
	}
	flush()
	sort.Strings(stanzas)
	return stanzas
}

// stanzaOpenedBy reports whether cur is an "auto" line waiting for its
// iface line.
func stanzaOpenedBy(cur []string) bool {
	return len(cur) == 1 && (strings.HasPrefix(cur[0], "auto ") || strings.HasPrefix(cur[0], "allow-"))
}

func normalizeNetworkd(s string) []string {
	var sections []string
	var cur []string
	name := ""
	flush := func() {
		if name != "" {
			sort.Strings(cur)
			sections = append(sections, name+" "+strings.Join(cur, " | "))
		}
		cur = nil
	}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			flush()
			name = line
			continue
		}
		cur = append(cur, line)
	}
	flush()
	sort.Strings(sections)
	return sections
}

func TestConvertErrors(t *testing.T) {
	tests := []struct {
		name, input, kind, out string
		wantErr                string
		wantFiles              bool
	}{
		{"disabled", "network: {config: disabled}\n", KindYAML, OutputENI, "disabled", false},
		{"unknown input kind", "{}", "xml", OutputENI, `unknown input kind "xml"`, false},
		{"unknown output kind", "version: 1\nconfig: []\n", KindYAML, "nmconnection", `unknown output kind "nmconnection"`, false},
		{"bad yaml", "version: [1\n", KindYAML, OutputENI, "decode network config: line", false},
		{"bad json", "{", KindNetworkDataJSON, OutputENI, "decode network_data.json", false},
		{"no version", "config: []\n", KindYAML, OutputENI, `missing key "version"`, false},
		{"one bad item", "version: 1\nconfig:\n  - {type: physical, name: eth0, subnets: [{type: dhcp}]}\n  - {type: bond, name: b}\n",
			KindYAML, OutputNetworkd, `config[1] (bond b): missing required key "bond_interfaces", "params"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := Convert([]byte(tt.input), tt.kind, tt.out, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Convert error = %v, want one containing %q", err, tt.wantErr)
			}
			if (len(files) > 0) != tt.wantFiles {
				t.Errorf("Convert returned %d files, want files: %v", len(files), tt.wantFiles)
			}
		})
	}
	if _, err := Convert([]byte("network: {config: disabled}"), KindYAML, OutputENI, nil); !errors.Is(err, ErrDisabled) {
		t.Errorf("disabled config: error %v is not ErrDisabled", err)
	}
}

func TestParseMAC(t *testing.T) {
	tests := []struct {
		in      string
		want    MAC
		wantErr bool
	}{
		{"eth0,fa:16:3e:00:00:01", MAC{Name: "eth0", Address: "fa:16:3e:00:00:01"}, false},
		{"eth0,00:0d:3a:04:75:98,hv_netvsc", MAC{Name: "eth0", Address: "00:0d:3a:04:75:98", Driver: "hv_netvsc"}, false},
		{"eth0", MAC{}, true},
		{",fa:16:3e:00:00:01", MAC{}, true},
		{"eth0,", MAC{}, true},
		{"eth0,fa:16:3e:00:00:01,", MAC{}, true},
		{"eth0,fa:16:3e:00:00:01,hv_netvsc,x", MAC{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseMAC(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseMAC(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestMACLookupIgnoresCase checks that --mac pairs match
// ethernet_mac_address whatever the case of either.
func TestMACLookupIgnoresCase(t *testing.T) {
	input := `{"links": [{"id": "a", "type": "phy", "ethernet_mac_address": "FA:16:3E:AA:BB:CC"}],
	 "networks": [{"id": "n", "type": "ipv4_dhcp", "link": "a"}]}`
	files, err := Convert([]byte(input), KindNetworkDataJSON, OutputNetworkd, []MAC{{Name: "lan0", Address: "fa:16:3e:aa:BB:cc"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := files["etc/systemd/network/10-cloud-init-lan0.network"]; !ok {
		t.Errorf("no file for lan0 in %v", sortedPaths(files))
	}
}

// BenchmarkConvert converts every test input to every output kind, the
// work `cloud-init devel net-convert` does per run (without its start-up).
func BenchmarkConvert(b *testing.B) {
	inputs := make([][]byte, len(convertCases))
	for i, c := range convertCases {
		inputs[i] = readCase(b, c)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, c := range convertCases {
			for _, out := range diffOutputs {
				if _, err := Convert(inputs[j], c.kind, out, c.macs); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// netdevLinkKeys are the [Network] keys that tie a link to a bond, bridge
// or VLAN .netdev; a bridge port's own settings are its [Bridge] section.
var netdevLinkKeys = []string{"Bond=", "Bridge=", "VLAN=", "PrimarySlave="}

// withoutNetdevs drops the .netdev files and the lines that refer to
// them from rendered networkd files.
func withoutNetdevs(files map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for path, data := range files {
		if strings.HasSuffix(path, ".netdev") {
			continue
		}
		_, rest := netdevLinks(string(data))
		out[path] = []byte(rest)
	}
	return out
}

// netdevLinks splits a .network file into its lines that tie the link to
// a .netdev (each as "[Section] line") and the rest of the file.
func netdevLinks(s string) (links []string, rest string) {
	var kept []string
	section := ""
	for _, line := range strings.Split(s, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "[") {
			section = trimmed
			if section == "[Bridge]" {
				continue
			}
		}
		isLink := section == "[Bridge]" && trimmed != ""
		for _, k := range netdevLinkKeys {
			isLink = isLink || (section == "[Network]" && strings.HasPrefix(trimmed, k))
		}
		if isLink {
			links = append(links, section+" "+trimmed)
			continue
		}
		if section == "[Bridge]" {
			continue
		}
		kept = append(kept, line)
	}
	sort.Strings(links)
	return links, strings.Join(kept, "\n")
}

// TestNetworkdNetdevsMatchNetplan renders every input with bonds, bridges
// or VLANs to netplan YAML with seedinit, has netplan's own networkd
// backend (netplan generate) turn that into networkd files, and compares
// its .netdev files, and the lines of its .network files that tie links
// to them, with what seedinit's networkd renderer writes for the same
// network.
func TestNetworkdNetdevsMatchNetplan(t *testing.T) {
	netplan, err := exec.LookPath("netplan")
	if err != nil {
		testenv.Skip(t, "netplan not installed (Debian's netplan.io): the .netdev oracle cannot run")
	}
	compared := 0
	for _, c := range convertCases {
		n, err := Parse(readCase(t, c), c.kind, c.macs)
		if err != nil || n == nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		virtual := false
		for _, iface := range n.Interfaces {
			virtual = virtual || iface.Type == model.TypeBond || iface.Type == model.TypeBridge || iface.Type == model.TypeVLAN
		}
		if !virtual {
			continue
		}
		compared++
		t.Run(c.file, func(t *testing.T) {
			yamlFiles, err := Render(n, OutputNetplan)
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			for path, data := range yamlFiles {
				// cloud-init spells bond-arp-ip-target's v2 name
				// arp-ip-target; netplan reads arp-ip-targets.
				data = bytes.ReplaceAll(data, []byte("arp-ip-target:"), []byte("arp-ip-targets:"))
				full := filepath.Join(root, path)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if out, err := exec.Command(netplan, "generate", "--root-dir", root).CombinedOutput(); err != nil {
				t.Fatalf("netplan generate: %v\n%s", err, out)
			}
			theirs := map[string][]byte{}
			dir := filepath.Join(root, "run/systemd/network")
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				data, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				theirs[strings.TrimPrefix(e.Name(), "10-netplan-")] = data
			}
			ours := map[string][]byte{}
			files, err := Render(n, OutputNetworkd)
			if err != nil {
				t.Fatal(err)
			}
			for path, data := range files {
				ours[strings.TrimPrefix(filepath.Base(path), "10-cloud-init-")] = data
			}
			for name, data := range theirs {
				switch {
				case strings.HasSuffix(name, ".netdev"):
					if diff := cmp.Diff(sortedLines(string(data)), sortedLines(string(ours[name]))); diff != "" {
						t.Errorf("%s differs (-netplan +seedinit):\n%s\nnetplan wrote:\n%s\nseedinit wrote:\n%s", name, diff, data, ours[name])
					}
				case strings.HasSuffix(name, ".network"):
					want, _ := netdevLinks(string(data))
					got, _ := netdevLinks(string(ours[name]))
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s: links to .netdevs differ (-netplan +seedinit):\n%s", name, diff)
					}
				}
			}
			for name := range ours {
				if strings.HasSuffix(name, ".netdev") && theirs[name] == nil {
					t.Errorf("seedinit writes %s, netplan does not", name)
				}
			}
		})
	}
	if compared < 8 {
		t.Errorf("%d inputs with bonds, bridges or VLANs, want at least 8", compared)
	}
}

func TestKindForFormat(t *testing.T) {
	for format, want := range map[string]string{
		"": KindYAML, "v1": KindYAML, "V2": KindYAML, "eni": KindENI, "network_data.json": KindNetworkDataJSON, "openstack": KindNetworkDataJSON,
		"ec2": KindEC2, "digitalocean": KindDigitalOcean, "vultr": KindVultr, "azure-imds": KindAzureIMDS, "oracle-vnics": KindOracleVNICs, "xml": "",
	} {
		got, ok := KindForFormat(format)
		if got != want || ok != (want != "") {
			t.Errorf("KindForFormat(%q) = %q, %v; want %q", format, got, ok, want)
		}
	}
}
