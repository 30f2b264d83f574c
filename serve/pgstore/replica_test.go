package pgstore

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/serve/pgstore/pgtest"
	"github.com/seedinit/seedinit/serve/server"
	"github.com/seedinit/seedinit/serve/state"
)

// The lab of these tests: waf-001 asks from 127.0.0.2.
var lab = Files{
	"groups/waf.yaml":        []byte("group: waf\nhostname: waf-{{ index | pad 3 }}\nuser-data:\n  packages: [nginx]\n"),
	"instances/waf-001.yaml": []byte("instance: waf-001\ngroups: [waf]\nselectors:\n  mac: 52:54:00:00:00:01\n  address: 127.0.0.2\n"),
	"instances/waf-002.yaml": []byte("instance: waf-002\ngroups: [waf]\nselectors: {mac: 52:54:00:00:00:02}\n"),
}

type replica struct {
	db  *DB
	srv *server.Server
	url string
}

// startReplica is one `seedinit serve --db DSN` on 127.0.0.1, signing
// with key, its inventory polled each poll.
func startReplica(t *testing.T, ctx context.Context, dsn string, key ed25519.PrivateKey, poll time.Duration) *replica {
	t.Helper()
	r := &replica{db: open(t, dsn)}
	var err error
	r.srv, _, err = r.db.NewServer(ctx, server.Config{SignKey: key, LeaseWait: -1, Log: testLog(t)}, poll)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(r.srv)
	t.Cleanup(ts.Close)
	r.url = ts.URL
	return r
}

// clientFrom is an HTTP client whose connections come from src, a
// loopback address.
func clientFrom(src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: nil, DialContext: d.DialContext}}
}

func do(t *testing.T, c *http.Client, method, url string, hdr http.Header, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(req.Header, hdr)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Two replicas over one database answer any request of any instance: a
// boot that fetches from A and reports to B is one record both status
// pages show; an IMDSv2 token from A is good on B; both sign the same
// manifest; an inventory stored through the loader is served by both
// without a restart, and a broken one is refused while they keep the
// last good one; requests to both at once lose no update.
func TestReplicas(t *testing.T) {
	dsn := pgtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loader := open(t, dsn)
	if _, _, _, err := loader.Load(ctx, lab, "lab"); err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(nil)
	// A poll of a minute: an edit seen sooner came by notification.
	a, b := startReplica(t, ctx, dsn, key, time.Minute), startReplica(t, ctx, dsn, key, time.Minute)
	c := clientFrom("127.0.0.2")

	t.Run("fetch from A, report to B", func(t *testing.T) {
		if code, body := do(t, c, "GET", a.url+"/nocloud/meta-data", nil, ""); code != 200 || !strings.Contains(body, "waf-001") {
			t.Fatalf("meta-data from A: %d %q", code, body)
		}
		if code, body := do(t, c, "POST", b.url+"/report/waf-001", nil, `{"status": "done", "errors": []}`); code != 200 {
			t.Fatalf("report to B: %d %q", code, body)
		}
		var pages []state.StatusJSON
		for _, r := range []*replica{a, b} {
			code, body := do(t, c, "GET", r.url+"/status?format=json", nil, "")
			var st state.StatusJSON
			if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
				t.Fatalf("status of %s: %d %v", r.url, code, err)
			}
			pages = append(pages, st)
		}
		ja, _ := json.Marshal(pages[0])
		jb, _ := json.Marshal(pages[1])
		if !bytes.Equal(ja, jb) {
			t.Errorf("the replicas' status pages differ:\nA %s\nB %s", ja, jb)
		}
		if st := pages[0]; st.Counts[state.Provisioned] != 1 || st.Counts[state.Waiting] != 1 || st.Instances[0].LastPart != "nocloud meta-data" {
			t.Errorf("status: %s, want waf-001 provisioned (fetched from A) and waf-002 waiting", ja)
		}
	})

	t.Run("token from A on B", func(t *testing.T) {
		code, tok := do(t, c, "PUT", a.url+"/latest/api/token", http.Header{"X-Aws-Ec2-Metadata-Token-Ttl-Seconds": {"60"}}, "")
		if code != 200 {
			t.Fatalf("token PUT to A: %d %q", code, tok)
		}
		if code, body := do(t, c, "GET", b.url+"/latest/meta-data/instance-id", http.Header{"X-Aws-Ec2-Metadata-Token": {tok}}, ""); code != 200 || body != "waf-001" {
			t.Errorf("A's token on B: %d %q", code, body)
		}
	})

	t.Run("one manifest", func(t *testing.T) {
		for _, f := range []string{seed.ManifestFile, seed.ManifestSignatureFile} {
			_, fromA := do(t, c, "GET", a.url+"/nocloud/waf-001/"+f, nil, "")
			_, fromB := do(t, c, "GET", b.url+"/nocloud/waf-001/"+f, nil, "")
			if fromA != fromB || fromA == "" {
				t.Errorf("%s differs between the replicas:\nA %q\nB %q", f, fromA, fromB)
			}
		}
	})

	waitServed := func(t *testing.T, r *replica, url string, want int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			code, _ := do(t, c, "GET", r.url+url, nil, "")
			if code == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s on %s: %d after 20s, want %d", url, r.url, code, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	edited := maps.Clone(lab)
	edited["instances/waf-003.yaml"] = []byte("instance: waf-003\ngroups: [waf]\n")
	t.Run("an edit is seen by both", func(t *testing.T) {
		if code, _ := do(t, c, "GET", b.url+"/nocloud/waf-003/meta-data", nil, ""); code != 404 {
			t.Fatalf("waf-003 before the edit: %d", code)
		}
		if _, _, changed, err := loader.Load(ctx, edited, "lab"); err != nil || !changed {
			t.Fatalf("load the edit: %v %v", changed, err)
		}
		waitServed(t, a, "/nocloud/waf-003/meta-data", 200)
		waitServed(t, b, "/nocloud/waf-003/meta-data", 200)
	})

	t.Run("a broken edit is refused", func(t *testing.T) {
		broken := maps.Clone(edited)
		broken["instances/waf-003.yaml"] = []byte("instance: waf-003\ngroups: [nope]\n")
		if _, _, _, err := loader.Load(ctx, broken, "lab"); err == nil || !strings.Contains(err.Error(), "waf-003.yaml") {
			t.Fatalf("a broken edit: %v, want its problem", err)
		}
		if n, err := loader.latest(ctx); err != nil || n != 2 {
			t.Errorf("latest generation %d %v after a refused load, want 2", n, err)
		}
		for _, r := range []*replica{a, b} {
			if code, _ := do(t, c, "GET", r.url+"/nocloud/waf-003/meta-data", nil, ""); code != 200 {
				t.Errorf("waf-003 on %s after a refused edit: %d", r.url, code)
			}
		}
	})

	t.Run("concurrent fetches and reports", func(t *testing.T) {
		before, _, _ := loader.Get(ctx, "waf-002")
		const workers, each = 8, 10
		var wg sync.WaitGroup
		for w := range workers {
			r := a
			if w%2 == 1 {
				r = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl := clientFrom("127.0.0.1")
				for range each {
					if code, _ := do(t, cl, "GET", r.url+"/nocloud/waf-002/user-data", nil, ""); code != 200 {
						t.Errorf("user-data: %d", code)
					}
					if code, _ := do(t, cl, "POST", r.url+"/report/waf-002", nil, `{"status": "running"}`); code != 200 {
						t.Errorf("report: %d", code)
					}
				}
			}()
		}
		wg.Wait()
		after, ok, err := loader.Get(ctx, "waf-002")
		if err != nil || !ok || after.Fetches-before.Fetches != workers*each || after.State != state.Fetched || after.Via != "report" {
			t.Errorf("waf-002 after %d fetches and reports on two replicas: %+v %v", workers*each, after, err)
		}
	})
}

// While the database is away, the replicas go on serving seeds (the
// inventory and the token secret are in memory) and say that the status
// is not there (503) rather than a wrong one; when it is back, they
// record again and see the next edit, without a restart.
func TestReplicasOutliveTheDatabase(t *testing.T) {
	cluster := pgtest.StartCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loader := open(t, cluster.DSN)
	if _, _, _, err := loader.Load(ctx, lab, "lab"); err != nil {
		t.Fatal(err)
	}
	a, b := startReplica(t, ctx, cluster.DSN, nil, time.Second), startReplica(t, ctx, cluster.DSN, nil, time.Second)
	c := clientFrom("127.0.0.2")
	cluster.Stop()
	if code, body := do(t, c, "GET", a.url+"/nocloud/meta-data", nil, ""); code != 200 || !strings.Contains(body, "waf-001") {
		t.Errorf("a seed while the database is away: %d %q", code, body)
	}
	code, tok := do(t, c, "PUT", a.url+"/latest/api/token", http.Header{"X-Aws-Ec2-Metadata-Token-Ttl-Seconds": {"60"}}, "")
	if code != 200 {
		t.Fatalf("token PUT while the database is away: %d", code)
	}
	if code, body := do(t, c, "GET", b.url+"/latest/meta-data/instance-id", http.Header{"X-Aws-Ec2-Metadata-Token": {tok}}, ""); code != 200 || body != "waf-001" {
		t.Errorf("A's token on B while the database is away: %d %q", code, body)
	}
	if code, _ := do(t, c, "GET", b.url+"/status", nil, ""); code != http.StatusServiceUnavailable {
		t.Errorf("status while the database is away: %d, want 503", code)
	}

	cluster.Restart()
	if code, _ := do(t, c, "GET", b.url+"/nocloud/user-data", nil, ""); code != 200 {
		t.Errorf("a seed after the database is back: %d", code)
	}
	if r, ok, err := loader.Get(ctx, "waf-001"); err != nil || !ok || r.LastPart != "nocloud user-data" {
		t.Errorf("the fetch after the database is back: %+v %v %v", r, ok, err)
	}
	edited := maps.Clone(lab)
	edited["instances/waf-003.yaml"] = []byte("instance: waf-003\ngroups: [waf]\n")
	if _, _, _, err := loader.Load(ctx, edited, "lab"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*replica{a, b} {
		deadline := time.Now().Add(20 * time.Second)
		for {
			code, _ := do(t, c, "GET", r.url+"/nocloud/waf-003/meta-data", nil, "")
			if code == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not serve the edit made after the database came back: %d", r.url, code)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
