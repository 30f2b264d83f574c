package server

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An edit to the inventory is served once reloaded; an edit that breaks
// it is refused and the inventory being served kept.
func TestReload(t *testing.T) {
	f := start(t, Config{})
	c := clientFrom("127.0.0.9")
	url := f.url + "/nocloud/waf-003/meta-data"
	if code, _ := get(t, c, url, nil); code != http.StatusNotFound {
		t.Fatalf("waf-003 before it is added: %d", code)
	}
	p := filepath.Join(f.dir, "instances/waf-003.yaml")
	if err := os.WriteFile(p, []byte("instance: waf-003\ngroups: [waf]\nselectors: {mac: 52:54:00:00:00:03}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.srv.ReloadIfChanged()
	if code, body := get(t, c, url, nil); code != http.StatusOK || !strings.Contains(body, "waf-003") {
		t.Fatalf("waf-003 after reload: %d %q", code, body)
	}
	// Broken: an unknown group. The old inventory stays.
	if err := os.WriteFile(p, []byte("instance: waf-003\ngroups: [nope]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, time.Now(), time.Now().Add(time.Minute))
	f.srv.ReloadIfChanged()
	if code, body := get(t, c, url, nil); code != http.StatusOK || !strings.Contains(body, "waf-003") {
		t.Errorf("a broken edit took waf-003 away: %d %q", code, body)
	}
	if err := f.srv.Reload(); err == nil {
		t.Error("Reload of a broken inventory: no error")
	}
}
