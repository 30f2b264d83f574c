package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes name: content into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestServeCheck(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"groups/waf.yaml":      "group: waf\nhostname: waf-{{ index | pad 3 }}\nuser-data:\n  packages: [nginx]\n",
		"instances/waf-1.yaml": "instance: waf-1\ngroups: [waf]\nselectors: {mac: 52:54:00:00:00:01}\n",
	})
	code, out, stderr := run(t, "serve", "check", "--show", "waf-1", dir)
	if code != exitOK || !strings.HasSuffix(out, ": 1 instances, 1 groups: ok\n") ||
		!strings.Contains(out, "local-hostname: \"waf-001\"") || !strings.Contains(out, "--- user-data\n#cloud-config\npackages:\n  - \"nginx\"\n") {
		t.Errorf("check a good inventory: exit %d\n%s%s", code, out, stderr)
	}
	writeFiles(t, dir, map[string]string{"instances/waf-2.yaml": "instance: waf-2\ngroups: [waf]\nuser-data:\n  runcmd: nope\n"})
	code, out, _ = run(t, "serve", "check", dir)
	if code != exitError || !strings.Contains(out, "instances/waf-2.yaml:4: user-data.runcmd: 'nope' is not of type 'array'\n") || !strings.HasSuffix(out, ": 1 problems\n") {
		t.Errorf("check a broken inventory: exit %d\n%s", code, out)
	}
}

// serve refuses to start on an inventory with problems, naming them,
// and on a signing key it cannot read; with no folder it says how.
func TestServeRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"instances/waf-1.yaml": "instance: waf-1\ngroups: [nope]\n"})
	code, _, stderr := run(t, "serve", "--listen", "127.0.0.1:0", dir)
	if code != exitError || !strings.Contains(stderr, "instances/waf-1.yaml") || !strings.Contains(stderr, "1 problems") {
		t.Errorf("serve a broken inventory: exit %d\n%s", code, stderr)
	}
	good := t.TempDir()
	writeFiles(t, good, map[string]string{"instances/waf-1.yaml": "instance: waf-1\n"})
	code, _, stderr = run(t, "serve", "run", "--listen", "127.0.0.1:0", "--sign-key", filepath.Join(good, "missing"), good)
	if code != exitError || !strings.Contains(stderr, "--sign-key") {
		t.Errorf("serve with a missing key: exit %d\n%s", code, stderr)
	}
	if code, _, stderr = run(t, "serve"); code != exitError || !strings.Contains(stderr, "usage: seedinit serve") {
		t.Errorf("serve alone: exit %d\n%s", code, stderr)
	}
}

// --dhcp's server address is the interface's own in the range's subnet.
func TestServeDHCPConfig(t *testing.T) {
	cfg, err := dhcpConfig("127.0.0.20-127.0.0.30/8", "lo", "", []string{"127.0.0.53"})
	if err != nil || cfg.ServerIP.String() != "127.0.0.1" || len(cfg.DNS) != 1 {
		t.Errorf("lo: %+v %v", cfg, err)
	}
	for _, tc := range []struct{ spec, iface, want string }{
		{"127.0.0.20-127.0.0.30/8", "", "needs --dhcp-interface"},
		{"10.99.0.10-10.99.0.20/24", "lo", "no IPv4 address in 10.99.0.0/24"},
		{"127.0.0.20/8", "lo", "FIRST-LAST/PREFIX"},
	} {
		if _, err := dhcpConfig(tc.spec, tc.iface, "", nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s on %q: %v, want %q", tc.spec, tc.iface, err, tc.want)
		}
	}
}
