package ds

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds/dstest"
)

// TestFetchToDirRoundTrip: what fetch writes, seed.LoadNoCloudDir (what
// apply --seed reads) reads back as the same instance.
func TestFetchToDirRoundTrip(t *testing.T) {
	env := newTestEnv(t, FileDevices{"/dev/sr0": dstest.ISO(t, "config-2", openStackTree(t, "latest"), "-J", "-r")}, nil, "")
	s, err := configDrive{}.Fetch(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "vendor-data"), []byte("stale"), 0o600)
	s.VendorData = nil
	s.Config = map[string]any{"system_info": map[string]any{"default_user": map[string]any{"name": "azureuser", "lock_passwd": false}}, "ssh_pwauth": true}
	if err := FetchToDir(s, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "vendor-data")); !os.IsNotExist(err) {
		t.Errorf("stale vendor-data kept: %v", err)
	}
	back, err := seed.LoadNoCloudDir(dir)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	type view struct {
		ID, Host, AZ string
		Keys         []string
		User         string
	}
	want := view{s.InstanceID, s.LocalHostname, s.AvailabilityZone, s.PublicKeys, string(s.UserData)}
	got := view{back.InstanceID, back.LocalHostname, back.AvailabilityZone, back.PublicKeys, string(back.UserData)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(s.Config, back.Config); diff != "" {
		t.Errorf("datasource config round trip (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, "network-config")); !os.IsNotExist(err) {
		t.Errorf("network-config written for a network_data.json seed: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "network_data.json"))
	if err != nil || !bytes.Equal(raw, s.NetworkConfig) {
		t.Errorf("network_data.json not kept as it came: %v", err)
	}
	var idata map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "instance-data.json"))
	if err := json.Unmarshal(b, &idata); err != nil {
		t.Fatal(err)
	}
	v1 := idata["v1"].(map[string]any)
	if v1["datasource"] != "ConfigDrive" || v1["instance-id"] != s.InstanceID || v1["platform"] != "openstack" {
		t.Errorf("instance-data v1 = %v", v1)
	}
	st, _ := os.Stat(filepath.Join(dir, "user-data"))
	if st.Mode().Perm() != 0o600 {
		t.Errorf("user-data mode %v", st.Mode())
	}
}

func TestRunFetchNamed(t *testing.T) {
	srv := applianceServer(t)
	env := newTestEnv(t, nil, nil, "")
	env.Fetcher = loopbackFetcher(t, FetchOptions{})
	env.Config.Datasource = map[string]map[string]any{"VendorHTTP": {"headers": map[string]any{"X-Appliance": "waf"}}}
	out := filepath.Join(t.TempDir(), "seed")
	var w strings.Builder
	s, err := RunFetch(context.Background(), &w, env, FetchRequest{Datasource: "vendorhttp", URL: srv.URL + "/acme/latest", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if s.InstanceID != "5f2c-appliance-01" || !strings.Contains(w.String(), out) {
		t.Errorf("seed %q, output %q", s.InstanceID, w.String())
	}
	if _, err := RunFetch(context.Background(), &w, env, FetchRequest{Datasource: "Nope", Out: out}); err == nil {
		t.Error("an unknown datasource was fetched")
	}
}
