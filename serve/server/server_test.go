package server

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedinit/seedinit/internal/sshkey"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds"
	"github.com/seedinit/seedinit/seed/trust"
)

// The fleet of these tests: waf-001 asks from 127.0.0.2 (an address
// selector), waf-002 from 127.0.0.3, which only a lease names.
const (
	uuid1 = "4c4c4544-0042-3510-8052-b3c04f4d4e31"
	uuid2 = "4c4c4544-0042-3510-8052-b3c04f4d4e32"
	mac1  = "52:54:00:00:00:01"
	mac2  = "52:54:00:00:00:02"
	addr1 = "127.0.0.2"
	addr2 = "127.0.0.3"
)

var fleet = map[string]string{
	"groups/waf.yaml": `group: waf
hostname: waf-{{ index | pad 3 }}
meta-data:
  public-keys: [ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGroupKeyGroupKeyGroupKeyGroupKeyGroupKe ops]
  availability-zone: lab-1a
user-data:
  packages: [nginx]
  write_files:
    - path: /etc/appliance/role
      content: waf
vendor-data:
  ntp: {servers: [10.0.0.1]}
network-config:
  version: 2
  ethernets:
    mgmt:
      match: {macaddress: "{{ mac }}"}
      dhcp4: true
`,
	"instances/waf-001.yaml": `instance: waf-001
groups: [waf]
selectors:
  mac: ` + mac1 + `
  system-uuid: ` + uuid1 + `
  serial: CZ0001
  address: ` + addr1 + `
`,
	"instances/waf-002.yaml": `instance: waf-002
groups: [waf]
selectors:
  mac: ` + mac2 + `
  system-uuid: ` + uuid2 + `
`,
}

func writeFleet(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// recorder is an Observer that keeps what it heard.
type recorder struct {
	mu                      sync.Mutex
	served, refused, status []string
}

func (r *recorder) Served(instance, layout, part, remote string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.served = append(r.served, instance+" "+layout+" "+part+" "+remote)
}

func (r *recorder) Refused(remote, path, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused = append(r.refused, remote+" "+path+": "+why)
}

func (r *recorder) Request(layout string, status int, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = append(r.status, layout+" "+http.StatusText(status))
}

func (r *recorder) refusals() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.refused, "\n")
}

// testLog writes the server's log to t.Log.
func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

type fixture struct {
	srv    *Server
	url    string // http://127.0.0.1:PORT
	dir    string
	leases string
	key    ed25519.PrivateKey
	trust  trust.Keys
	obs    *recorder
}

// start serves the fleet on 127.0.0.1 with a lease file that gives
// addr2 to mac2; cfg's other fields are the test's.
func start(t *testing.T, cfg Config, extra ...map[string]string) *fixture {
	t.Helper()
	files := maps.Clone(fleet)
	for _, e := range extra {
		maps.Copy(files, e)
	}
	f := &fixture{dir: writeFleet(t, files), obs: &recorder{}}
	f.leases = filepath.Join(t.TempDir(), "dnsmasq.leases")
	lease := strings.Join([]string{"0", mac2, addr2, "waf-002", "*"}, " ") + "\n"
	if err := os.WriteFile(f.leases, []byte(lease), 0o644); err != nil {
		t.Fatal(err)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := sshkey.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	f.key, f.trust = priv, trust.Keys{k}
	cfg.Dir = f.dir
	cfg.Leases = append(cfg.Leases, f.leases)
	cfg.Observer = f.obs
	if cfg.LeaseWait == 0 {
		cfg.LeaseWait = -1
	}
	cfg.Log = testLog(t)
	if cfg.SignKey != nil {
		cfg.SignKey = priv
	}
	f.srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(f.srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	f.url = ts.URL
	return f
}

// signing is a Config that signs (start puts in the fixture's key).
var signing = Config{SignKey: ed25519.PrivateKey{0}}

// fetcherFrom is a seed/ds Fetcher whose connections come from src, a
// loopback address (Linux routes all of 127/8 to lo).
func fetcherFrom(t *testing.T, src string) *ds.Fetcher {
	t.Helper()
	f := ds.NewFetcher(ds.FetchOptions{Timeout: 5 * time.Second, Retries: ds.NoRetries}, testLog(t))
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	f.Client = &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: d.DialContext}}
	return f
}

// clientFrom is a plain HTTP client whose connections come from src.
func clientFrom(src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: d.DialContext, DisableKeepAlives: true}}
}

func fetch(t *testing.T, name string, env *ds.Env) *seed.Seed {
	t.Helper()
	d, ok := ds.Lookup(name)
	if !ok {
		t.Fatalf("no datasource %s", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := d.Fetch(ctx, env)
	if err != nil {
		t.Fatalf("%s Fetch: %v", name, err)
	}
	return s
}

// decide is the trust decision under require on a machine with uuid and
// mac.
func (f *fixture) decide(s *seed.Seed, uuid, mac string) (*seed.Seed, *trust.Decision) {
	return trust.Decide(s, trust.Anchor{Policy: trust.Require, Keys: f.trust, Where: "test"},
		trust.Facts{SystemUUID: uuid, MACs: []string{mac}, Now: time.Now()})
}

func get(t *testing.T, c *http.Client, url string, hdr http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
