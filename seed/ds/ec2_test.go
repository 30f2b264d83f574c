package ds

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/seed"

	"github.com/seedinit/seedinit/internal/testenv"
)

// fakeIMDS serves a path->body fixture the way EC2's IMDS does, with
// IMDSv2 tokens when asked.
type fakeIMDS struct {
	files map[string]string
	// requireToken refuses GETs without a valid token (IMDSv2 enforced).
	requireToken bool
	// noTokenRoute answers the token PUT with 404 (a pre-IMDSv2 copy).
	noTokenRoute bool
	// tokenStatus, when set, is the answer to every token PUT.
	tokenStatus int

	mu     sync.Mutex
	tokens map[string]bool
	issued int
	paths  []string
}

func newFakeIMDS(t *testing.T, fixture string) *fakeIMDS {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeIMDS{tokens: map[string]bool{}}
	if err := json.Unmarshal(data, &f.files); err != nil {
		t.Fatalf("decode %s: %v", fixture, err)
	}
	return f
}

// expireTokens forgets every issued token, as an IMDS restart would.
func (f *fakeIMDS) expireTokens() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens = map[string]bool{}
}

func (f *fakeIMDS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	f.mu.Lock()
	f.paths = append(f.paths, r.Method+" "+path)
	if path == imdsTokenPath {
		defer f.mu.Unlock()
		switch {
		case f.noTokenRoute:
			http.NotFound(w, r)
		case f.tokenStatus != 0:
			w.WriteHeader(f.tokenStatus)
		case r.Method != http.MethodPut:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case r.Header.Get(imdsTokenTTLHeader) == "":
			w.WriteHeader(http.StatusBadRequest)
		default:
			f.issued++
			token := fmt.Sprintf("secret-token-%d", f.issued)
			f.tokens[token] = true
			fmt.Fprint(w, token)
		}
		return
	}
	valid := f.tokens[r.Header.Get(imdsTokenHeader)]
	f.mu.Unlock()
	if f.requireToken && !valid {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	body, ok := f.files[path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	fmt.Fprint(w, body)
}

func (f *fakeIMDS) requested(path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.paths {
		if strings.HasSuffix(p, " "+path) {
			return true
		}
	}
	return false
}

// testEnv is an Env for fetching from url with quick, bounded requests;
// logs go to buf when it is not nil.
func testEnv(url string, settings map[string]map[string]any, buf *bytes.Buffer) *Env {
	env := &Env{
		Endpoint: url,
		DMI:      MapDMI{},
		Config: Config{
			Datasource: settings,
			Fetch:      FetchOptions{Timeout: 2 * time.Second, Retries: NoRetries, Backoff: time.Millisecond},
		},
	}
	if buf != nil {
		env.Log = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return env
}

func TestEC2Fetch(t *testing.T) {
	want := &seed.Seed{
		Datasource:       "Ec2",
		Platform:         "ec2",
		CloudName:        "unknown",
		InstanceID:       "i-0a1b2c3d4e5f60718",
		LocalHostname:    "ip-10-0-1-17.eu-west-1.compute.internal",
		Region:           "eu-west-1",
		AvailabilityZone: "eu-west-1b",
		PublicKeys: []string{
			"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAdminKeyForTheApplianceFixture admin@example",
			"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBackupKeyForTheApplianceFixture backup@example",
		},
		UserData:      []byte("#cloud-config\nhostname: waf-01\n"),
		NetworkFormat: "ec2",
	}
	tests := []struct {
		name     string
		server   func(*fakeIMDS)
		settings map[string]any
		wantErr  string
	}{
		{name: "IMDSv2 enforced", server: func(f *fakeIMDS) { f.requireToken = true }},
		{name: "IMDSv1 only, fallback allowed", server: func(f *fakeIMDS) { f.noTokenRoute = true },
			settings: map[string]any{"imdsv1_fallback": "yes"}},
		{name: "IMDSv1 only, no fallback", server: func(f *fakeIMDS) { f.noTokenRoute = true },
			wantErr: "IMDSv1 fallback not enabled"},
		{name: "endpoint disabled (403) never falls back", server: func(f *fakeIMDS) { f.tokenStatus = http.StatusForbidden },
			settings: map[string]any{"imdsv1_fallback": true}, wantErr: "endpoint is disabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			imds := newFakeIMDS(t, "ec2/imds.json")
			tt.server(imds)
			srv := httptest.NewServer(imds)
			defer srv.Close()
			var logs bytes.Buffer
			env := testEnv(srv.URL, map[string]map[string]any{"Ec2": tt.settings}, &logs)
			got, err := ec2Datasource{}.Fetch(context.Background(), env)
			if strings.Contains(logs.String(), "secret-token") {
				t.Errorf("the IMDSv2 token reached the log:\n%s", logs.String())
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Fetch error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if imds.requested("2021-03-23/meta-data/iam/security-credentials/appliance-role") {
				t.Error("the crawl read IAM security credentials")
			}
			var network map[string]any
			if err := json.Unmarshal(got.NetworkConfig, &network); err != nil {
				t.Fatalf("network config is not JSON: %v", err)
			}
			if ips := network["interfaces"].(map[string]any)["macs"].(map[string]any)["06:1d:2e:3f:4a:5b"].(map[string]any)["local-ipv4s"]; !cmp.Equal(ips, []any{"10.0.1.17", "10.0.1.18"}) {
				t.Errorf("per-NIC local-ipv4s = %#v", ips)
			}
			if doc := stringAt(got.Metadata, "dynamic", "instance-identity", "document", "accountId"); doc != "111122223333" {
				t.Errorf("identity document not kept in metadata: accountId %q", doc)
			}
			if iam, ok := got.Metadata["iam"].(map[string]any); !ok || iam["info"] == nil {
				t.Errorf("iam/info not decoded as JSON: %#v", got.Metadata["iam"])
			}
			if !strings.HasPrefix(got.Subplatform, "metadata (http://127.0.0.1:") {
				t.Errorf("Subplatform = %q", got.Subplatform)
			}
			ignore := func(s *seed.Seed) *seed.Seed {
				c := *s
				c.Metadata, c.NetworkConfig, c.Subplatform = nil, nil, ""
				return &c
			}
			if diff := cmp.Diff(want, ignore(got)); diff != "" {
				t.Errorf("seed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEC2TokenRenewedAfter401(t *testing.T) {
	imds := newFakeIMDS(t, "ec2/imds.json")
	imds.requireToken = true
	srv := httptest.NewServer(imds)
	defer srv.Close()
	env := testEnv(srv.URL, nil, nil)
	session := newIMDSSession(newMetadataClient(env, "Ec2"), srv.URL, imdsTokenRequired)
	ctx := context.Background()
	if err := session.connect(ctx); err != nil {
		t.Fatal(err)
	}
	imds.expireTokens()
	got, err := session.get(ctx, "2021-03-23/meta-data/instance-id")
	if err != nil {
		t.Fatalf("get after the token went stale: %v", err)
	}
	if string(got) != "i-0a1b2c3d4e5f60718" || imds.issued != 2 {
		t.Errorf("got %q with %d tokens issued, want the instance-id and 2 tokens", got, imds.issued)
	}
}

func TestEC2TokenRenewedBeforeExpiry(t *testing.T) {
	imds := newFakeIMDS(t, "ec2/imds.json")
	imds.requireToken = true
	srv := httptest.NewServer(imds)
	defer srv.Close()
	session := newIMDSSession(newMetadataClient(testEnv(srv.URL, nil, nil), "Ec2"), srv.URL, imdsTokenRequired)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	session.now = func() time.Time { return now }
	ctx := context.Background()
	if err := session.connect(ctx); err != nil {
		t.Fatal(err)
	}
	start := now
	for _, step := range []struct {
		at         time.Time
		wantIssued int
	}{
		{start.Add(time.Hour), 1},
		{start.Add(imdsTokenTTL - imdsTokenMargin/2), 2},
		{start.Add(2*imdsTokenTTL + time.Hour), 3},
	} {
		now = step.at
		if _, err := session.get(ctx, "2021-03-23/meta-data/instance-id"); err != nil {
			t.Fatal(err)
		}
		if imds.issued != step.wantIssued {
			t.Errorf("at %v: %d tokens issued, want %d", step.at.Sub(start), imds.issued, step.wantIssued)
		}
	}
}

func TestEC2VersionFallsBackToLatest(t *testing.T) {
	imds := newFakeIMDS(t, "ec2/imds.json")
	latest := map[string]string{}
	for k, v := range imds.files {
		latest["latest/"+strings.TrimPrefix(k, "2021-03-23/")] = v
	}
	imds.files = latest
	srv := httptest.NewServer(imds)
	defer srv.Close()
	got, err := ec2Datasource{}.Fetch(context.Background(), testEnv(srv.URL, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got.InstanceID != "i-0a1b2c3d4e5f60718" {
		t.Errorf("InstanceID = %q", got.InstanceID)
	}
}

func TestEC2Probe(t *testing.T) {
	tests := []struct {
		name     string
		dmi      MapDMI
		settings map[string]any
		want     Verdict
	}{
		{"AWS uuid and serial", MapDMI{"product_uuid": "EC2E1916-9099-7CAF-FD21-012345ABCDEF", "product_serial": "ec2e1916-9099-7caf-fd21-012345abcdef"}, nil, Found},
		{"uuid without matching serial", MapDMI{"product_uuid": "ec2e1916-9099-7caf-fd21-012345abcdef", "product_serial": "other"}, nil, Maybe},
		{"Brightbox", MapDMI{"product_serial": "srv-abcde.gb1.brightbox.com"}, nil, Found},
		{"ZStack", MapDMI{"chassis_asset_tag": "123.zstack.io"}, nil, Found},
		{"Outscale", MapDMI{"sys_vendor": "3DS Outscale", "product_name": "3DS Outscale VM"}, nil, Found},
		{"unknown", MapDMI{"sys_vendor": "QEMU"}, nil, Maybe},
		{"unknown, strict", MapDMI{"sys_vendor": "QEMU"}, map[string]any{"strict_id": true}, NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := &Env{DMI: tt.dmi, Config: Config{Datasource: map[string]map[string]any{"Ec2": tt.settings}}}
			ev, err := ec2Datasource{}.Probe(context.Background(), env)
			if err != nil || ev.Verdict != tt.want {
				t.Errorf("Probe = %v (%s), %v; want %v", ev.Verdict, ev.Reason, err, tt.want)
			}
		})
	}
}

// hostileHandlers are metadata servers that misbehave; each must give an
// error within the request budget.
func hostileHandlers() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"404 everywhere": func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
		"500 everywhere": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
		"hangs": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		},
		"huge body": func(w http.ResponseWriter, r *http.Request) {
			chunk := bytes.Repeat([]byte("a"), 1<<20)
			for i := 0; i < 40; i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		},
		"redirect loop": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path, http.StatusFound)
		},
		"invalid JSON": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"instance-id": "i-1", "truncated`)
		},
		"endless listing": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/"+imdsTokenPath {
				fmt.Fprint(w, "t")
				return
			}
			if strings.HasSuffix(r.URL.Path, "/instance-id") {
				fmt.Fprint(w, "i-1")
				return
			}
			fmt.Fprint(w, "deeper/\nmore/\n")
		},
	}
}

func TestEC2HostileServers(t *testing.T) {
	for name, h := range hostileHandlers() {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			env := testEnv(srv.URL, map[string]map[string]any{"Ec2": {"timeout": 0.3}}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			got, err := ec2Datasource{}.Fetch(ctx, env)
			if err == nil {
				t.Fatalf("Fetch = %+v, want an error", got)
			}
			if ctx.Err() != nil {
				t.Errorf("Fetch ran out the whole 5 s budget: %v", err)
			}
		})
	}
}

// ec2MockBinary finds amazon-ec2-metadata-mock as scripts/ec2-mock builds it.
func ec2MockBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SEEDINIT_EC2_MOCK"); p != "" {
		return p
	}
	p, err := filepath.Abs(filepath.Join("..", "..", ".cache", "ec2mock", "ec2-metadata-mock"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		testenv.Skipf(t, "amazon-ec2-metadata-mock not built (run scripts/ec2-mock, or set SEEDINIT_EC2_MOCK): %v", err)
	}
	return p
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestEC2AgainstMetadataMock runs the fetch against AWS's own IMDS
// emulator with IMDSv2 enforced (-I), on loopback.
func TestEC2AgainstMetadataMock(t *testing.T) {
	bin := ec2MockBinary(t)
	port := freeLoopbackPort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--imdsv2", "--hostname", "127.0.0.1", "--port", fmt.Sprint(port))
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+cmd.Dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mock did not listen on %s: %v\n%s", base, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// IMDSv2 is really enforced: a tokenless GET is refused.
	resp, err := http.Get(base + "/latest/meta-data/instance-id")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("tokenless GET answered %d, want 401: the mock does not enforce IMDSv2", resp.StatusCode)
	}

	var logs bytes.Buffer
	got, err := ec2Datasource{}.Fetch(ctx, testEnv(base, nil, &logs))
	if err != nil {
		t.Fatalf("Fetch from the mock: %v\n%s", err, out.String())
	}
	if strings.Contains(logs.String(), "X-aws-ec2-metadata-token:") {
		t.Errorf("a token header reached the log:\n%s", logs.String())
	}
	want := &seed.Seed{
		Datasource:       "Ec2",
		Platform:         "ec2",
		CloudName:        "unknown",
		InstanceID:       "i-1234567890abcdef0",
		LocalHostname:    "ip-172-16-34-43.ec2.internal",
		Region:           "us-east-1",
		AvailabilityZone: "us-east-1f",
		NetworkFormat:    "ec2",
	}
	if len(got.PublicKeys) != 1 || !strings.HasPrefix(got.PublicKeys[0], "ssh-rsa ") {
		t.Errorf("PublicKeys = %q, want the mock's one ssh-rsa key", got.PublicKeys)
	}
	if len(got.UserData) == 0 {
		t.Error("no user-data from the mock")
	}
	if !bytes.Contains(got.NetworkConfig, []byte(`"macs"`)) {
		t.Errorf("network config lacks the per-NIC tree: %s", got.NetworkConfig)
	}
	trimmed := *got
	trimmed.Metadata, trimmed.NetworkConfig, trimmed.Subplatform, trimmed.PublicKeys, trimmed.UserData = nil, nil, "", nil, nil
	if diff := cmp.Diff(want, &trimmed); diff != "" {
		t.Errorf("seed from the mock (-want +got):\n%s", diff)
	}
}

// route is one fixture URL: the testdata file it serves and the header a
// request must carry (name: value), as the real service demands.
type route struct {
	file          string
	header, value string
}

// fixtureServer serves testdata files at paths (with their query
// string, when the key has one) and 404 elsewhere; it answers 403 (as
// GCE does without Metadata-Flavor) when a required header is missing.
func fixtureServer(t *testing.T, routes map[string]route) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt, ok := routes[r.URL.RequestURI()]
		if !ok {
			rt, ok = routes[r.URL.Path]
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		if rt.header != "" && r.Header.Get(rt.header) != rt.value {
			http.Error(w, "missing "+rt.header, http.StatusForbidden)
			return
		}
		data, err := os.ReadFile(filepath.Join("testdata", rt.file))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// cloudCase is one datasource fetched from its fixture layout.
type cloudCase struct {
	name     string
	ds       Datasource
	routes   map[string]route
	dmi      MapDMI
	settings map[string]any
	// endpoint maps the server URL to Env.Endpoint ("" leaves it unset).
	endpoint func(serverURL string) string
	want     *seed.Seed
	// wantNetwork is the expected NetworkFormat with a non-empty config.
	wantNetwork string
	wantErr     string
}

func runCloudCases(t *testing.T, cases []cloudCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fixtureServer(t, tc.routes)
			endpoint := srv.URL
			if tc.endpoint != nil {
				endpoint = tc.endpoint(srv.URL)
			}
			env := testEnv(endpoint, map[string]map[string]any{tc.ds.Name(): tc.settings}, nil)
			if tc.dmi != nil {
				env.DMI = tc.dmi
			}
			got, err := tc.ds.Fetch(context.Background(), env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Fetch error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if got.Metadata == nil || !strings.Contains(got.Subplatform, "127.0.0.1") {
				t.Errorf("Metadata %v, Subplatform %q: want the tree and the loopback URL", got.Metadata != nil, got.Subplatform)
			}
			if tc.wantNetwork != "" && (got.NetworkFormat != tc.wantNetwork || len(got.NetworkConfig) == 0) {
				t.Errorf("network %q (%d bytes), want %q", got.NetworkFormat, len(got.NetworkConfig), tc.wantNetwork)
			}
			trimmed := *got
			trimmed.Metadata, trimmed.NetworkConfig, trimmed.NetworkFormat, trimmed.Subplatform = nil, nil, "", ""
			if diff := cmp.Diff(tc.want, &trimmed); diff != "" {
				t.Errorf("seed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNetworkCloudsHostile runs every HTTP datasource of this file set
// against misbehaving servers: each must fail, and inside its budget.
func TestNetworkCloudsHostile(t *testing.T) {
	datasources := []Datasource{ec2Datasource{}, aliYunDatasource{}, exoscaleDatasource{}, gceDatasource{},
		digitalOceanDatasource{}, hetznerDatasource{}, oracleDatasource{}, vultrDatasource{}, scalewayDatasource{}, azureDatasource{}}
	for name, h := range hostileHandlers() {
		srv := httptest.NewServer(h)
		for _, d := range datasources {
			t.Run(name+"/"+d.Name(), func(t *testing.T) {
				env := testEnv(srv.URL, map[string]map[string]any{d.Name(): {"timeout": 0.3}}, nil)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				got, err := d.Fetch(ctx, env)
				if err == nil {
					t.Fatalf("Fetch = %+v, want an error", got)
				}
				if ctx.Err() != nil {
					t.Errorf("Fetch ran out the whole 5 s budget: %v", err)
				}
			})
		}
		srv.Close()
	}
}
