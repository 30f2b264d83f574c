package server

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"maps"
	"net"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/seedinit/seedinit/apply/all"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/internal/sshkey"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds"
	"github.com/seedinit/seedinit/seed/trust"
	"github.com/seedinit/seedinit/serve/inventory"
	"github.com/seedinit/seedinit/serve/state"
)

const (
	uuid3 = "4c4c4544-0042-3510-8052-b3c04f4d4e33"
	mac3  = "52:54:00:00:00:03"
)

// The module lists keep the run to write_files: waf-002's run is clean,
// waf-003's fails (a file where a directory must be).
var reportFleet = map[string]string{
	"instances/waf-002.yaml": fleet["instances/waf-002.yaml"] + `user-data:
  cloud_init_modules: [write_files]
  cloud_config_modules: []
  cloud_final_modules: []
`,
	"instances/waf-003.yaml": `instance: waf-003
groups: [waf]
selectors:
  mac: ` + mac3 + `
  system-uuid: ` + uuid3 + `
user-data:
  cloud_init_modules: [write_files]
  cloud_config_modules: []
  cloud_final_modules: []
  write_files:
    - {path: /etc/appliance, content: "a file"}
    - {path: /etc/appliance/role, content: waf}
`,
}

// seedinit serve --report-url gives each instance its report URL in the
// signed meta-data; the instance, under require, fetches its seed, runs
// its stages and reports to that URL; the server's state then says
// provisioned or failed, with the failed one's error.
func TestReportURLRoundTrip(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	store, err := state.OpenFileStore(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var srv *Server
	tracker := state.NewTracker(state.Config{Store: store, Inventory: func() *inventory.Inventory { return srv.Inventory() }, Log: testLog(t)})
	f := &fixture{dir: writeFleet(t, mergeFiles(fleet, reportFleet))}
	f.key, f.trust = testKey(t)
	srv, err = New(Config{Dir: f.dir, SignKey: f.key, ReportURL: base + "/", LeaseWait: -1, Log: testLog(t), Observer: tracker, Extra: tracker.Handlers()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	defer ts.Close()

	for _, tc := range []struct {
		name, uuid, mac string
		want            state.State
		wantErr         string
	}{
		{"waf-002", uuid2, mac2, state.Provisioned, ""},
		{"waf-003", uuid3, mac3, state.Failed, "write_files: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &ds.Env{
				Cmdline: "ds=nocloud;s=" + base + "/nocloud/__dmi.system-uuid__/",
				DMI:     ds.MapDMI{"product_uuid": tc.uuid},
				Fetcher: fetcherFrom(t, "127.0.0.9"),
				Log:     testLog(t),
			}
			applied, d := f.decide(fetch(t, "NoCloud", env), tc.uuid, tc.mac)
			if d.SignedBy == "" || d.Refused() {
				t.Fatalf("require: %s's own signed seed not taken: %+v", tc.name, d)
			}
			want := base + "/report/" + tc.name
			if got, from, err := stages.ReportURL(nil, applied); got != want || err != nil {
				t.Fatalf("report URL of the applied seed: %q from %q (%v), want %q", got, from, err, want)
			}
			root, err := rootfs.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			errs, warns := d.Report()
			if _, err := stages.Run(context.Background(), stages.Options{Root: root, Seed: applied, Sys: &applytest.FakeSystem{},
				Log: testLog(t), SeedTrust: d, SeedErrors: errs, SeedWarnings: warns, ModuleTimeout: 10 * time.Second}); err != nil {
				t.Fatal(err)
			}
			rec, ok, err := store.Get(context.Background(), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if !ok || rec.State != tc.want || rec.Via != "report" {
				t.Errorf("%s: record %+v, want %s by report", tc.name, rec, tc.want)
			}
			if got := strings.Join(rec.Errors, "\n"); tc.wantErr != "" && !strings.Contains(got, tc.wantErr) || tc.wantErr == "" && got != "" {
				t.Errorf("%s: errors %q, want %q", tc.name, got, tc.wantErr)
			}
		})
	}

	// OpenStack carries it in meta_data.json's meta, the vendor layout in
	// its meta_data.json; both signed.
	vendorCfg, err := ds.ParseConfig(map[string]any{"datasource": map[string]any{"VendorHTTP": map[string]any{"base_url": base + "/vendor/latest/"}}})
	if err != nil {
		t.Fatal(err)
	}
	for layout, env := range map[string]*ds.Env{
		"OpenStack":  {Endpoint: base, Fetcher: fetcherFrom(t, addr1), Log: testLog(t)},
		"VendorHTTP": {Config: vendorCfg, Fetcher: fetcherFrom(t, addr1), Log: testLog(t)},
	} {
		applied, d := f.decide(fetch(t, layout, env), uuid1, mac1)
		if got, from, err := stages.ReportURL(nil, applied); got != base+"/report/waf-001" || err != nil {
			t.Errorf("%s, under require: report URL %q from %q (%v), want %s/report/waf-001; decision %+v", layout, got, from, err, base, d)
		}
	}
}

// mergeFiles is the files of each map, a later one's over an earlier's.
func mergeFiles(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// testKey is a signing key and the trust anchor's keys that trust it.
func testKey(t *testing.T) (ed25519.PrivateKey, trust.Keys) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := sshkey.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return priv, trust.Keys{k}
}

// An instance whose meta-data names its own report URL (templated, as a
// group would) keeps it; a reload fills the new inventory; a base that is
// not an http URL is refused when the server starts.
func TestAddReportURL(t *testing.T) {
	own := map[string]string{"instances/waf-001.yaml": fleet["instances/waf-001.yaml"] + "meta-data:\n  " + seed.ReportURLKey + ": \"http://127.0.0.1:9/{{ name }}\"\n"}
	inv, err := inventory.Load(writeFleet(t, mergeFiles(fleet, own)))
	if err != nil {
		t.Fatal(err)
	}
	if err := inv.AddReportURL("http://127.0.0.1:8080/fleet/"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"waf-001": "http://127.0.0.1:9/waf-001", "waf-002": "http://127.0.0.1:8080/fleet/report/waf-002"} {
		inst, _ := inv.Instance(name)
		if got := inst.MetaData[seed.ReportURLKey]; got != want {
			t.Errorf("%s: %s %v, want %s", name, seed.ReportURLKey, got, want)
		}
		if meta, err := openStackMeta(inst); err != nil || !strings.Contains(string(meta), `"meta":{"`+seed.ReportURLKey+`":"`+want+`"}`) {
			t.Errorf("%s: meta_data.json %s (%v) does not carry it in meta", name, meta, err)
		}
	}
	// A reload gives the new inventory's instances theirs too.
	srv, err := New(Config{Dir: writeFleet(t, fleet), ReportURL: "http://127.0.0.1:8080", Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if inst, _ := srv.Inventory().Instance("waf-002"); inst.MetaData[seed.ReportURLKey] != "http://127.0.0.1:8080/report/waf-002" {
		t.Errorf("after a reload, waf-002's meta-data: %v", inst.MetaData)
	}
	for _, bad := range []string{"127.0.0.1:8080", "ftp://host/", "http://", "http://host/?q=1"} {
		if _, err := New(Config{Dir: writeFleet(t, fleet), ReportURL: bad}); err == nil || !strings.Contains(err.Error(), "report URL") {
			t.Errorf("--report-url %q: %v, want an error naming the report URL", bad, err)
		}
	}
}
