package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedinit/seedinit/seed/ds"
	"github.com/seedinit/seedinit/seed/trust"
	"github.com/seedinit/seedinit/serve/inventory"
	"github.com/seedinit/seedinit/serve/state"
)

var exportFleet = map[string]string{
	"groups/waf.yaml":         "group: waf\nhostname: waf-{{ index | pad 3 }}\nuser-data:\n  packages: [nginx]\n",
	"instances/waf-1.yaml":    "instance: waf-1\ngroups: [waf]\nselectors: {mac: 52:54:00:00:00:01}\n",
	"instances/waf-2.yaml":    "instance: waf-2\ngroups: [waf]\nselectors: {system-uuid: 4c4c4544-0042-3510-8052-b3c04f4d4e02}\n",
	"instances/bridge-3.yaml": "instance: bridge-3\nnetwork-config:\n  version: 2\n  ethernets: {eth0: {}}\n  bridges: {br0: {interfaces: [eth0], dhcp4: true}}\n",
}

// serve export writes a signed image per instance; the one whose network
// a config drive cannot carry fails alone, named, and the exit says so.
func TestServeExport(t *testing.T) {
	dir := t.TempDir()
	invDir := filepath.Join(dir, "inventory")
	writeFiles(t, invDir, exportFleet)
	key, pubFile := writeSigningKey(t, dir)
	pub, _ := os.ReadFile(pubFile)
	keys, err := trust.ParseKeys(pub, pubFile)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := run(t, "serve", "export", "--format", "configdrive", "--sign-key", key, "--valid-for", "1d", "--out", out, invDir)
	if code != exitError || !strings.Contains(stderr, "export instance bridge-3 (instances/bridge-3.yaml)") || !strings.Contains(stderr, "1 of 3 instances failed") {
		t.Errorf("export: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, name := range []string{"waf-1", "waf-2"} {
		img := filepath.Join(out, name+".config-2.iso")
		if !strings.Contains(stdout, img+"\n") {
			t.Errorf("%s not listed: %s", img, stdout)
		}
		res, err := ds.DetectStage(context.Background(), &ds.Env{Devices: ds.FileDevices{"/dev/sr0": img}}, 0, ds.StageLocal)
		if err != nil || res.Seed == nil {
			t.Fatalf("read %s: %v", img, err)
		}
		facts := trust.Facts{MACs: []string{"52:54:00:00:00:01"}, SystemUUID: "4c4c4544-0042-3510-8052-b3c04f4d4e02", Now: time.Now()}
		if got, d := trust.Decide(res.Seed, trust.Anchor{Policy: trust.Require, Keys: keys}, facts); d.Refused() || got.InstanceID != name {
			t.Errorf("%s: %+v", name, d)
		}
	}
	if code, _, stderr := run(t, "serve", "export", "--format", "floppy", "--out", out, invDir); code != exitError || !strings.Contains(stderr, "want iso, vfat or configdrive") {
		t.Errorf("a bad format: %d %s", code, stderr)
	}
}

// serve status reads the state folder offline, with or without the
// inventory, and asks a running server's /status.
func TestServeStatus(t *testing.T) {
	dir := t.TempDir()
	invDir := filepath.Join(dir, "inventory")
	writeFiles(t, invDir, exportFleet)
	stateDir := filepath.Join(dir, "state")
	store, err := state.OpenFileStore(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store.Fetched(ctx, "waf-1", state.Fetch{Layout: "nocloud", Part: "user-data", Source: "10.0.0.1", At: time.Now()})
	store.Reported(ctx, "waf-2", state.Report{Via: "report", At: time.Now(), Final: true, Errors: []string{"runcmd: exit status 2"}})
	defer store.Close()

	code, out, stderr := run(t, "serve", "status", "--state", stateDir, "--inventory", invDir)
	if code != exitOK || !strings.Contains(out, "3 instances: 1 waiting, 1 fetched, 0 provisioned, 1 failed\n") || !strings.Contains(out, "  runcmd: exit status 2\n") {
		t.Errorf("status with the inventory: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = run(t, "serve", "status", "--state", stateDir, "--format", "json")
	var doc state.StatusJSON
	if err := json.Unmarshal([]byte(out), &doc); code != exitOK || err != nil || len(doc.Instances) != 2 || doc.Counts[state.Failed] != 1 {
		t.Errorf("status json without the inventory: exit %d %v\n%s", code, err, out)
	}

	inv, err := inventory.Load(invDir)
	if err != nil {
		t.Fatal(err)
	}
	tr := state.NewTracker(state.Config{Store: store, Inventory: func() *inventory.Inventory { return inv }})
	mux := http.NewServeMux()
	for p, h := range tr.Handlers() {
		mux.Handle(p, h)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	code, out, stderr = run(t, "serve", "status", "--url", srv.URL)
	if code != exitOK || !strings.Contains(out, "bridge-3  waiting") {
		t.Errorf("status --url: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := run(t, "serve", "status", "--state", stateDir, "--url", srv.URL); code != exitError || !strings.Contains(stderr, "usage") {
		t.Errorf("--state and --url: %d %s", code, stderr)
	}
}
