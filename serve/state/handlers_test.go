package state

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seedinit/seedinit/serve/inventory"
)

func loadInventory(t *testing.T) *inventory.Inventory {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"instances/waf-007.yaml": "instance: waf-007\nselectors:\n  mac: 52:54:00:00:00:07\nmeta-data:\n  instance-id: iid-waf-007\n",
		"instances/waf-008.yaml": "instance: waf-008\nselectors:\n  system-uuid: 4c4c4544-0042-3510-8052-b3c04f4d4e08\n",
		// Known by address: it reports from there or not at all.
		"instances/waf-009.yaml": "instance: waf-009\nselectors:\n  address: 10.99.0.9\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inv, err := inventory.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// testServer mounts the tracker's handlers as the server does, on
// loopback.
func testServer(t *testing.T) (*Tracker, *httptest.Server, *bytes.Buffer) {
	t.Helper()
	inv := loadInventory(t)
	store, err := OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var logs bytes.Buffer
	tr := NewTracker(Config{
		Store:     store,
		Inventory: func() *inventory.Inventory { return inv },
		Log:       slog.New(slog.NewTextHandler(&logs, nil)),
		Now:       func() time.Time { return t0 },
	})
	mux := http.NewServeMux()
	for p, h := range tr.Handlers() {
		mux.Handle(p, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return tr, srv, &logs
}

func post(t *testing.T, u, contentType string, body io.Reader) (int, string) {
	t.Helper()
	resp, err := http.Post(u, contentType, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", u, resp.Status, b)
	}
	return string(b)
}

func state(t *testing.T, tr *Tracker, instance string) Record {
	t.Helper()
	r, ok, err := tr.cfg.Store.Get(context.Background(), instance)
	if err != nil || !ok {
		t.Fatalf("no record of %s: %v", instance, err)
	}
	return r
}

// phone_home's POST, as cloud-init's module sends it: to a URL with the
// instance-id in it, or with the id in the form only.
func TestPhoneHome(t *testing.T) {
	tr, srv, logs := testServer(t)
	form := url.Values{
		"instance_id":     {"iid-waf-007"},
		"hostname":        {"waf-007"},
		"fqdn":            {"waf-007.lab"},
		"pub_key_ed25519": {"ssh-ed25519 AAAAC3NzaHostKey root@waf-007\n"},
		"pub_key_rsa":     {"N/A"},
	}
	const formType = "application/x-www-form-urlencoded"
	if code, body := post(t, srv.URL+"/phone-home/iid-waf-007", formType, strings.NewReader(form.Encode())); code != http.StatusOK {
		t.Fatalf("phone_home by instance-id: %d %s", code, body)
	}
	r := state(t, tr, "waf-007")
	if r.State != Provisioned || r.Via != "phone-home" || r.Hostname != "waf-007.lab" || r.HostKeys["pub_key_ed25519"] != "ssh-ed25519 AAAAC3NzaHostKey root@waf-007" || len(r.HostKeys) != 1 || r.LastSource != "127.0.0.1" {
		t.Errorf("after phone_home: %+v", r)
	}
	form.Set("instance_id", "waf-008")
	if code, body := post(t, srv.URL+"/phone-home/", formType, strings.NewReader(form.Encode())); code != http.StatusOK {
		t.Fatalf("phone_home by the form's id: %d %s", code, body)
	}
	if r := state(t, tr, "waf-008"); r.State != Provisioned {
		t.Errorf("waf-008 after phone_home: %+v", r)
	}

	for _, c := range []struct {
		name, path, id string
		code           int
		why            string
	}{
		{"unknown", "/phone-home/waf-999", "waf-999", http.StatusNotFound, "unknown instance"},
		{"mismatch", "/phone-home/waf-007", "iid-waf-008", http.StatusConflict, "instance_id mismatch"},
		{"address", "/phone-home/waf-009", "waf-009", http.StatusForbidden, "source address not the instance's"},
		{"nothing", "/phone-home/", "", http.StatusBadRequest, "phone_home names no instance"},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs.Reset()
			code, body := post(t, srv.URL+c.path, formType, strings.NewReader(url.Values{"instance_id": {c.id}}.Encode()))
			if code != c.code || !strings.Contains(body, c.why) {
				t.Errorf("%s: %d %q, want %d %q", c.path, code, body, c.code, c.why)
			}
			if !strings.Contains(logs.String(), "refused") || !strings.Contains(logs.String(), c.why) {
				t.Errorf("refusal not logged with why: %s", logs)
			}
		})
	}
	if _, ok, _ := tr.cfg.Store.Get(context.Background(), "waf-009"); ok {
		t.Error("a refused report recorded")
	}
	big := strings.NewReader("pub_key_rsa=" + strings.Repeat("A", maxPhoneHomeBody))
	if code, _ := post(t, srv.URL+"/phone-home/waf-007", formType, big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("an oversized form: %d", code)
	}
}

// seedinit's report: `seedinit status --format json` or status.json.
func TestReport(t *testing.T) {
	tr, srv, _ := testServer(t)
	failed, err := os.ReadFile("../../apply/stages/testdata/status/error.json")
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(t, srv.URL+"/report/waf-007", "application/json", bytes.NewReader(failed)); code != http.StatusOK {
		t.Fatalf("report: %d %s", code, body)
	}
	r := state(t, tr, "waf-007")
	if r.State != Failed || len(r.Errors) != 3 || r.Errors[1] != "runcmd: exit status 2" {
		t.Errorf("after a failed report: %+v", r)
	}
	statusJSON := `{"v1": {"datasource": "nocloud", "stage": null, "init-local": {"start": 1, "finished": 2, "errors": [], "recoverable_errors": {}},
		"modules-final": {"start": 3, "finished": 4, "errors": ["scripts_user: exit 1"]}}}`
	post(t, srv.URL+"/report/waf-008", "application/json", strings.NewReader(statusJSON))
	if r := state(t, tr, "waf-008"); r.State != Failed || len(r.Errors) != 1 || r.Errors[0] != "modules-final: scripts_user: exit 1" {
		t.Errorf("after status.json with errors: %+v", r)
	}
	post(t, srv.URL+"/report/waf-007", "application/json", strings.NewReader(`{"status": "done", "errors": []}`))
	if r := state(t, tr, "waf-007"); r.State != Provisioned || len(r.Errors) != 0 {
		t.Errorf("after a success: %+v", r)
	}
	for _, c := range []struct {
		path, body string
		code       int
	}{
		{"/report/waf-999", `{"status": "done"}`, http.StatusNotFound},
		{"/report/waf-007", `not json`, http.StatusBadRequest},
		{"/report/waf-007", `{"other": 1}`, http.StatusBadRequest},
		{"/report/waf-007", `{"errors": ["` + strings.Repeat("x", maxReportBody) + `"]}`, http.StatusRequestEntityTooLarge},
	} {
		if code, body := post(t, srv.URL+c.path, "application/json", strings.NewReader(c.body)); code != c.code {
			t.Errorf("%s %.40q: %d %s, want %d", c.path, c.body, code, body, c.code)
		}
	}
}

// /status lists every inventory instance, waiting ones included; the
// JSON form counts them by state.
func TestStatusPage(t *testing.T) {
	tr, srv, _ := testServer(t)
	tr.Served("waf-008", "nocloud", "user-data", "10.99.0.8:4242")
	post(t, srv.URL+"/report/waf-007", "application/json", strings.NewReader(`{"status": "error", "errors": ["runcmd: exit status 2"]}`))

	text := get(t, srv.URL+"/status")
	for _, want := range []string{
		"waf-007   failed ",
		"waf-008   fetched",
		"10.99.0.8",
		"waf-009   waiting",
		"3 instances: 1 waiting, 1 fetched, 0 provisioned, 1 failed",
		"waf-007 (failed, report):\n  runcmd: exit status 2",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/status lacks %q:\n%s", want, text)
		}
	}
	var doc StatusJSON
	if err := json.Unmarshal([]byte(get(t, srv.URL+"/status?format=json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Counts[Waiting] != 1 || doc.Counts[Failed] != 1 || len(doc.Instances) != 3 || doc.Instances[1].LastPart != "nocloud user-data" {
		t.Errorf("/status?format=json: %+v", doc)
	}
}

// /metrics is Prometheus' text format: requests by layout and code, the
// latency histogram, instances by state, refusals by reason.
func TestMetrics(t *testing.T) {
	tr, srv, _ := testServer(t)
	tr.Request("nocloud", 200, 3*time.Millisecond)
	tr.Request("nocloud", 200, 30*time.Millisecond)
	tr.Request("ec2", 404, time.Millisecond)
	tr.Refused("10.0.0.1:1", "/nocloud/x/user-data", "unknown instance: x")
	tr.Refused("10.0.0.2:1", "/nocloud/y/user-data", "unknown instance: y")
	tr.Served("waf-007", "nocloud", "meta-data", "127.0.0.1:1")
	out := get(t, srv.URL+"/metrics")
	for _, want := range []string{
		"# TYPE seedinit_serve_requests_total counter\n",
		`seedinit_serve_requests_total{layout="ec2",code="404"} 1` + "\n",
		`seedinit_serve_requests_total{layout="nocloud",code="200"} 2` + "\n",
		"# TYPE seedinit_serve_request_duration_seconds histogram\n",
		`seedinit_serve_request_duration_seconds_bucket{layout="nocloud",le="0.0025"} 0` + "\n",
		`seedinit_serve_request_duration_seconds_bucket{layout="nocloud",le="0.005"} 1` + "\n",
		`seedinit_serve_request_duration_seconds_bucket{layout="nocloud",le="0.05"} 2` + "\n",
		`seedinit_serve_request_duration_seconds_bucket{layout="nocloud",le="+Inf"} 2` + "\n",
		`seedinit_serve_request_duration_seconds_count{layout="nocloud"} 2` + "\n",
		`seedinit_serve_instances{state="waiting"} 2` + "\n",
		`seedinit_serve_instances{state="fetched"} 1` + "\n",
		`seedinit_serve_refusals_total{reason="unknown instance"} 2` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, out)
		}
	}
	// Every sample line is NAME{labels} VALUE or NAME VALUE.
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "# ") {
			continue
		}
		if !sampleLine.MatchString(line) {
			t.Errorf("not a sample line: %q", line)
		}
	}
}

var sampleLine = regexp.MustCompile(`^seedinit_serve_[a-z_]+(\{([a-z]+="([^"\\]|\\.)*",?)+\})? [0-9.e+-]+$`)

func TestLabelEscaping(t *testing.T) {
	if got := labelValue("a\"b\\c\nd"); got != `"a\"b\\c\nd"` {
		t.Errorf("labelValue: %s", got)
	}
}
