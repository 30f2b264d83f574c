package ds

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fwCfg makes a by_name tree with entries (name -> content).
func fwCfg(t *testing.T, entries map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range entries {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "raw"), []byte(content), 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "size"), []byte("0\n"), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	// QEMU's own entries are there too.
	if err := os.MkdirAll(filepath.Join(dir, "etc", "table-loader"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestQemuFwCfgLayouts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		entries  map[string]string
		instance string
		reason   string
		where    string
	}{
		{
			name: "cloud-init's layout",
			entries: map[string]string{
				"opt/io.cloud-init/cloud-init/meta-data":      "instance-id: fw-1\nlocal-hostname: waf-fw\n",
				"opt/io.cloud-init/cloud-init/user-data":      "#cloud-config\nhostname: waf-fw\n",
				"opt/io.cloud-init/cloud-init/network-config": "version: 2\n",
			},
			instance: "fw-1",
			reason:   "fw_cfg entries opt/io.cloud-init/cloud-init/meta-data and opt/io.cloud-init/cloud-init/user-data",
			where:    "opt/io.cloud-init/cloud-init",
		},
		{
			name: "systemd credentials, no instance-id",
			entries: map[string]string{
				"opt/io.systemd.credentials/cloud-init.meta-data": "local-hostname: waf-fw\n",
				"opt/io.systemd.credentials/cloud-init.user-data": "#cloud-config\n",
				"opt/io.systemd.credentials/other.credential":     "x",
			},
			instance: "iid-qemufwcfg",
			reason:   "fw_cfg entries opt/io.systemd.credentials/cloud-init.meta-data and opt/io.systemd.credentials/cloud-init.user-data",
			where:    "opt/io.systemd.credentials",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &Env{FwCfgDir: fwCfg(t, tc.entries), Log: testLogger(t)}
			ev, err := qemuFwCfg{}.Probe(context.Background(), env)
			if err != nil || ev.Verdict != Found || ev.Reason != tc.reason {
				t.Fatalf("probe: %+v, %v", ev, err)
			}
			s, err := qemuFwCfg{}.Fetch(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			if s.InstanceID != tc.instance || s.LocalHostname != "waf-fw" || s.Datasource != "QemuFwCfg" {
				t.Errorf("seed: instance %q hostname %q datasource %q", s.InstanceID, s.LocalHostname, s.Datasource)
			}
			if !strings.HasSuffix(s.Subplatform, tc.where+")") || !strings.HasPrefix(s.Subplatform, "fw_cfg (") {
				t.Errorf("subplatform %q", s.Subplatform)
			}
		})
	}
}

func TestQemuFwCfgNotFound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dir    func(t *testing.T) string
		reason string
	}{
		{"no fw_cfg device", func(t *testing.T) string { return filepath.Join(t.TempDir(), "missing") }, "no QEMU fw_cfg device"},
		{"meta-data alone", func(t *testing.T) string {
			return fwCfg(t, map[string]string{"opt/io.cloud-init/cloud-init/meta-data": "instance-id: a\n"})
		}, "has no"},
		{"only QEMU's entries", func(t *testing.T) string { return fwCfg(t, nil) }, "has no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &Env{FwCfgDir: tc.dir(t), Log: testLogger(t)}
			ev, err := qemuFwCfg{}.Probe(context.Background(), env)
			if err != nil || ev.Verdict != NotFound || !strings.Contains(ev.Reason, tc.reason) {
				t.Errorf("probe: %+v, %v; want not found, %q", ev, err, tc.reason)
			}
			if _, err := (qemuFwCfg{}).Fetch(context.Background(), env); err == nil {
				t.Error("fetch succeeded")
			}
		})
	}
}

// A meta-data that is not YAML is an error that names the entry.
func TestQemuFwCfgBadMetaData(t *testing.T) {
	env := &Env{FwCfgDir: fwCfg(t, map[string]string{
		"opt/io.cloud-init/cloud-init/meta-data": "instance-id: [\n",
		"opt/io.cloud-init/cloud-init/user-data": "#cloud-config\n",
	}), Log: testLogger(t)}
	_, err := qemuFwCfg{}.Fetch(context.Background(), env)
	if err == nil || !strings.Contains(err.Error(), "fw_cfg opt/io.cloud-init/cloud-init/meta-data") {
		t.Errorf("fetch: %v, want an error naming the entry", err)
	}
}
