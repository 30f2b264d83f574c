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
