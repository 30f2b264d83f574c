package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The lease keeper is started by PID 1, but a person may run it by hand:
// what it refuses names what and where.
func TestDHCPKeepRefusals(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	empty := filepath.Join(dir, "empty.json")
	for name, content := range map[string]string{bad: `{"leases": 3}`, empty: `{"leases": []}`} {
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dhcp"}, "usage: seedinit dhcp keep"},
		{[]string{"dhcp", "renew"}, "usage: seedinit dhcp keep"},
		{[]string{"dhcp", "keep", "--state", filepath.Join(dir, "none.json")}, "none.json: no such file"},
		{[]string{"dhcp", "keep", "--state", bad}, "bad.json: json: cannot unmarshal"},
		{[]string{"dhcp", "keep", "--state", empty}, "none to keep"},
		{[]string{"dhcp", "keep", "--state", empty, "--network", filepath.Join(dir, "net.json")}, "net.json: no such file"},
	} {
		code, _, stderr := run(t, c.args...)
		if code != exitError || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, exitError, c.want)
		}
	}
}
