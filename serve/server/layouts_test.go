package server

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seedinit/seedinit/seed/ds"
)

// seedinit's OpenStack metadata service client, asking from waf-001's
// address, reads meta_data.json derived from its meta-data and its
// user-data, signed and bound to it.
func TestOpenStack(t *testing.T) {
	f := start(t, signing)
	env := &ds.Env{Endpoint: f.url, Fetcher: fetcherFrom(t, addr1), Log: testLog(t)}
	s := fetch(t, "OpenStack", env)
	if s.InstanceID != "waf-001" || s.LocalHostname != "waf-001" || s.AvailabilityZone != "lab-1a" {
		t.Errorf("instance-id %q, hostname %q, zone %q: want waf-001's", s.InstanceID, s.LocalHostname, s.AvailabilityZone)
	}
	if len(s.PublicKeys) != 1 || !strings.HasPrefix(s.PublicKeys[0], "ssh-ed25519 ") {
		t.Errorf("public keys %q", s.PublicKeys)
	}
	if !strings.Contains(string(s.UserData), "/etc/appliance/role") || !strings.Contains(string(s.VendorData), "ntp") {
		t.Errorf("user-data %q, vendor-data %q: not the fleet's", s.UserData, s.VendorData)
	}
	if s.NetworkFormat != "network_data.json" || !strings.Contains(string(s.NetworkConfig), mac1) {
		t.Errorf("network %s %q: want network_data.json naming waf-001's MAC", s.NetworkFormat, s.NetworkConfig)
	}
	if !strings.Contains(s.Subplatform, f.url) {
		t.Errorf("subplatform %q", s.Subplatform)
	}
	_, d := f.decide(s, uuid1, mac1)
	for _, p := range d.Parts {
		if p.Part == "meta-data" || p.Part == "user-data" || p.Part == "network-config" {
			if p.Verdict != "trusted" {
				t.Errorf("require: %s %s (%s)", p.Part, p.Verdict, p.Detail)
			}
		}
	}
	if d.SignedBy == "" {
		t.Errorf("no manifest decided: %+v", d)
	}
	if _, d := f.decide(s, uuid2, mac2); d.SignedBy != "" {
		t.Errorf("waf-001's OpenStack seed accepted on waf-002: %+v", d)
	}
	// waf-002 has no address selector: the lease finds it.
	env = &ds.Env{Endpoint: f.url, Fetcher: fetcherFrom(t, addr2), Log: testLog(t)}
	if s := fetch(t, "OpenStack", env); s.InstanceID != "waf-002" {
		t.Errorf("from %s: instance-id %q, want waf-002 (by lease)", addr2, s.InstanceID)
	}
	// An address nobody has is refused.
	if code, body := get(t, clientFrom("127.0.0.9"), f.url+"/openstack/latest/meta_data.json", nil); code != http.StatusNotFound || !strings.Contains(body, "no lease") {
		t.Errorf("unknown address: %d %q", code, body)
	}
}

// seedinit's EC2 client (IMDSv2 only, its default) reads the instance's
// meta-data tree, user-data and identity document.
func TestEC2IMDSv2(t *testing.T) {
	f := start(t, Config{})
	env := &ds.Env{Endpoint: f.url, Fetcher: fetcherFrom(t, addr2), Log: testLog(t)}
	s := fetch(t, "Ec2", env)
	if s.InstanceID != "waf-002" || s.LocalHostname != "waf-002" || s.AvailabilityZone != "lab-1a" || s.Region != "lab-1" {
		t.Errorf("instance-id %q, hostname %q, zone %q, region %q: want waf-002's", s.InstanceID, s.LocalHostname, s.AvailabilityZone, s.Region)
	}
	if len(s.PublicKeys) != 1 || !strings.HasPrefix(s.PublicKeys[0], "ssh-ed25519 ") {
		t.Errorf("public keys %q", s.PublicKeys)
	}
	if !strings.Contains(string(s.UserData), "/etc/appliance/role") {
		t.Errorf("user-data %q", s.UserData)
	}
	if !strings.Contains(string(s.NetworkConfig), mac2) {
		t.Errorf("network metadata %q lacks the instance's MAC", s.NetworkConfig)
	}
}

// Without a token a GET is refused (IMDSv1 is off unless asked for); a
// token is bound to the address that PUT for it; a PUT through a proxy
// (X-Forwarded-For) gets none.
func TestEC2Tokens(t *testing.T) {
	f := start(t, Config{})
	c1 := clientFrom(addr1)
	put := func(c *http.Client, hdr http.Header) (int, string) {
		req, _ := http.NewRequest(http.MethodPut, f.url+"/latest/api/token", nil)
		req.Header = hdr
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	code, tok := put(c1, http.Header{tokenTTLHeader: {"60"}})
	if code != http.StatusOK || tok == "" {
		t.Fatalf("token PUT: %d %q", code, tok)
	}
	md := f.url + "/latest/meta-data/instance-id"
	if code, body := get(t, c1, md, http.Header{tokenHeader: {tok}}); code != http.StatusOK || body != "waf-001" {
		t.Errorf("with the token: %d %q", code, body)
	}
	for _, tc := range []struct {
		name string
		c    *http.Client
		hdr  http.Header
		code int
		why  string
	}{
		{"no token", c1, nil, http.StatusUnauthorized, "no IMDSv2 token"},
		{"bad token", c1, http.Header{tokenHeader: {"forged"}}, http.StatusUnauthorized, "unknown IMDSv2 token"},
		{"another address's token", clientFrom(addr2), http.Header{tokenHeader: {tok}}, http.StatusUnauthorized, "another address"},
	} {
		if code, body := get(t, tc.c, md, tc.hdr); code != tc.code || !strings.Contains(body, tc.why) {
			t.Errorf("%s: %d %q, want %d saying %q", tc.name, code, body, tc.code, tc.why)
		}
	}
	if code, _ := put(c1, http.Header{tokenTTLHeader: {"60"}, "X-Forwarded-For": {"10.0.0.1"}}); code != http.StatusForbidden {
		t.Errorf("PUT with X-Forwarded-For: %d, want 403", code)
	}
	if code, _ := put(c1, http.Header{tokenTTLHeader: {"99999"}}); code != http.StatusBadRequest {
		t.Errorf("PUT with a TTL over 21600: %d, want 400", code)
	}
	if strings.Contains(f.obs.refusals(), tok) {
		t.Error("a token was passed to the observer")
	}

	// --imdsv1: a GET without a token is answered.
	f = start(t, Config{IMDSv1: true})
	if code, body := get(t, clientFrom(addr1), f.url+"/latest/meta-data/instance-id", nil); code != http.StatusOK || body != "waf-001" {
		t.Errorf("IMDSv1 allowed: %d %q", code, body)
	}
}

// seedinit's VendorHTTP source, pointed at the vendor layout's prefix,
// reads the instance's seed and its signed manifest.
func TestVendorHTTP(t *testing.T) {
	f := start(t, Config{SignKey: signing.SignKey, VendorPrefix: "/acme/"})
	env := &ds.Env{Fetcher: fetcherFrom(t, addr1), Log: testLog(t)}
	cfg, err := ds.ParseConfig(map[string]any{"datasource": map[string]any{"VendorHTTP": map[string]any{
		"base_url":       f.url + "/acme/latest/",
		"vendor_data":    "vendor_data",
		"network_config": "network-config",
	}}})
	if err != nil {
		t.Fatal(err)
	}
	env.Config = cfg
	s := fetch(t, "VendorHTTP", env)
	if s.InstanceID != "waf-001" || s.LocalHostname != "waf-001" {
		t.Errorf("instance-id %q, hostname %q", s.InstanceID, s.LocalHostname)
	}
	if !strings.Contains(string(s.UserData), "/etc/appliance/role") || !strings.Contains(string(s.VendorData), "ntp") || !strings.Contains(string(s.NetworkConfig), mac1) {
		t.Errorf("user-data %q, vendor-data %q, network %q", s.UserData, s.VendorData, s.NetworkConfig)
	}
	_, d := f.decide(s, uuid1, mac1)
	if d.Refused() || d.SignedBy == "" {
		t.Errorf("require refused waf-001's vendor seed: %+v", d)
	}
	if _, d := f.decide(s, uuid2, mac2); !d.Refused() {
		t.Errorf("waf-001's vendor seed accepted on waf-002: %+v", d)
	}
	// meta_data_keys: one key per URL.
	if code, body := get(t, clientFrom(addr1), f.url+"/acme/latest/meta_data/local-hostname", nil); code != http.StatusOK || body != "waf-001" {
		t.Errorf("meta_data/local-hostname: %d %q", code, body)
	}
}

// A neighbour's routes (status, metrics) are mounted beside the
// layouts, and the observer hears each request's layout and status.
func TestExtraAndObserver(t *testing.T) {
	f := start(t, Config{Extra: map[string]http.Handler{
		"GET /status": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("all well")) }),
	}})
	if code, body := get(t, clientFrom(addr1), f.url+"/status", nil); code != http.StatusOK || body != "all well" {
		t.Errorf("/status: %d %q", code, body)
	}
	get(t, clientFrom(addr1), f.url+"/nocloud/meta-data", nil)
	get(t, clientFrom(addr1), f.url+"/nocloud/nobody/meta-data", nil)
	f.obs.mu.Lock()
	defer f.obs.mu.Unlock()
	want := []string{"nocloud OK", "nocloud Not Found"}
	if strings.Join(f.obs.status, ",") != strings.Join(want, ",") {
		t.Errorf("observer heard %q, want %q", f.obs.status, want)
	}
	if len(f.obs.served) != 1 || f.obs.served[0] != "waf-001 nocloud meta-data "+addr1 {
		t.Errorf("observer heard served %q", f.obs.served)
	}
}

// A neighbour's route that takes a layout's path is an error, not a
// panic.
func TestExtraConflict(t *testing.T) {
	_, err := New(Config{Dir: writeFleet(t, fleet), Extra: map[string]http.Handler{"/nocloud/": http.NotFoundHandler()}})
	if err == nil || !strings.Contains(err.Error(), `"/nocloud/"`) {
		t.Errorf("New with a conflicting route: %v", err)
	}
}

// Replicas that share a token secret accept each other's tokens (one
// boot's PUT and GETs may reach different replicas); a server of another
// secret does not, and a token whose expiry is changed is no token.
func TestEC2TokensAcrossReplicas(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, MinTokenSecret)
	a, b := start(t, Config{TokenSecret: secret}), start(t, Config{TokenSecret: secret})
	other := start(t, Config{})
	c1 := clientFrom(addr1)
	req, _ := http.NewRequest(http.MethodPut, a.url+"/latest/api/token", nil)
	req.Header.Set(tokenTTLHeader, "60")
	resp, err := c1.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	tokb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tok := string(tokb)
	if code, body := get(t, c1, b.url+"/latest/meta-data/instance-id", http.Header{tokenHeader: {tok}}); code != http.StatusOK || body != "waf-001" {
		t.Errorf("A's token on B: %d %q", code, body)
	}
	if code, _ := get(t, c1, other.url+"/latest/meta-data/instance-id", http.Header{tokenHeader: {tok}}); code != http.StatusUnauthorized {
		t.Errorf("A's token on a server of another secret: %d, want 401", code)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	raw[0] ^= 1 // a later expiry
	if code, _ := get(t, c1, b.url+"/latest/meta-data/instance-id", http.Header{tokenHeader: {base64.RawURLEncoding.EncodeToString(raw)}}); code != http.StatusUnauthorized {
		t.Errorf("a token with its expiry changed: %d, want 401", code)
	}
	if _, err := New(Config{Dir: a.dir, TokenSecret: []byte("short")}); err == nil {
		t.Error("a 5-byte token secret was taken")
	}
}

// A token is refused once its TTL is over.
func TestEC2TokenExpires(t *testing.T) {
	now := time.Unix(1000, 900e6)
	tk := newTokens(func() time.Time { return now }, nil)
	tok := tk.issue(mustAddr(addr1), time.Second)
	now = now.Add(999 * time.Millisecond)
	if why := tk.check(tok, mustAddr(addr1)); why != "" {
		t.Fatalf("a token a second long, a moment before its second is over: %s", why)
	}
	now = now.Add(2 * time.Second)
	if why := tk.check(tok, mustAddr(addr1)); why != "expired IMDSv2 token" {
		t.Errorf("token after its TTL: %q", why)
	}
}
