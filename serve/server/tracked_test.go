package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/internal/testenv"
	"github.com/seedinit/seedinit/serve/inventory"
	"github.com/seedinit/seedinit/serve/state"
)

// The server as `seedinit serve` runs it: the tracker hears the layouts,
// its handlers share the listener, and the state outlives the process.
func TestServerWithTracker(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	store, err := state.OpenFileStore(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	var srv *Server
	tracker := state.NewTracker(state.Config{Store: store, Inventory: func() *inventory.Inventory { return srv.Inventory() }, Log: testLog(t)})
	var access testenv.Buffer
	srv, err = New(Config{Dir: writeFleet(t, fleet), Log: testLog(t), Observer: tracker, Extra: tracker.Handlers(), AccessLog: &access})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do("GET", "/nocloud/"+uuid1+"/user-data", ""); code != http.StatusOK || !strings.Contains(body, "nginx") {
		t.Fatalf("user-data of waf-001: %d %s", code, body)
	}
	if code, _ := do("GET", "/nocloud/"+uuid2+"/meta-data", ""); code != http.StatusOK {
		t.Fatalf("meta-data of waf-002: %d", code)
	}
	if code, body := do("POST", "/report/waf-002", `{"status": "done", "errors": []}`); code != http.StatusOK {
		t.Fatalf("report: %d %s", code, body)
	}
	if code, _ := do("GET", "/nocloud/no-such-instance/user-data", ""); code != http.StatusNotFound {
		t.Errorf("an unknown instance: %d, want 404", code)
	}
	// Refused, but for a known instance: the access log names it.
	if code, _ := do("GET", "/nocloud/"+uuid1+"/seed-manifest", ""); code != http.StatusNotFound {
		t.Errorf("a manifest from a server without a key: %d, want 404", code)
	}
	_, page := do("GET", "/status?format=json", "")
	var doc state.StatusJSON
	if err := json.Unmarshal([]byte(page), &doc); err != nil {
		t.Fatalf("/status?format=json: %v\n%s", err, page)
	}
	if doc.Counts[state.Provisioned] != 1 || doc.Counts[state.Fetched] != 1 {
		t.Errorf("/status: %s", page)
	}
	_, metrics := do("GET", "/metrics", "")
	for _, want := range []string{`layout="nocloud"`, `code="200"`, `code="404"`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, metrics)
		}
	}
	// The layouts' requests, one line each; the tracker's pages are not
	// a layout's.
	lines := strings.Split(strings.TrimSuffix(access.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("access log: %d lines, want 4:\n%s", len(lines), access.String())
	}
	for i, want := range []string{
		"127.0.0.1 waf-001 GET /nocloud/" + uuid1 + "/user-data 200 ",
		"127.0.0.1 waf-002 GET /nocloud/" + uuid2 + "/meta-data 200 ",
		"127.0.0.1 - GET /nocloud/no-such-instance/user-data 404 ",
		"127.0.0.1 waf-001 GET /nocloud/" + uuid1 + "/seed-manifest 404 ",
	} {
		if f := strings.SplitN(lines[i], " ", 2); len(f) != 2 || !strings.HasPrefix(f[1], want) {
			t.Errorf("access log line %d: %q, want TIME %s MS", i+1, lines[i], want)
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := state.ReadFileStore(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for name, want := range map[string]state.State{"waf-001": state.Fetched, "waf-002": state.Provisioned} {
		if r, ok, err := again.Get(context.Background(), name); err != nil || !ok || r.State != want {
			t.Errorf("%s read back from %s: %+v %v %v, want %s", name, stateDir, r, ok, err, want)
		}
	}
}
