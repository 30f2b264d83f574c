package ds

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/internal/nstest"
)

// fakeMMDS is Firecracker's MMDS version 2 as its documentation and
// source describe it: tokens from a PUT (TTL 1 to 21600 s, refused with
// X-Forwarded-For), every GET carrying one in X-metadata-token (EC2's
// header names are not Firecracker's), the document's value at the path
// as JSON for Accept: application/json, else in IMDS text form (and only
// so with imdsCompat).
type fakeMMDS struct {
	doc        any
	imdsCompat bool

	mu     sync.Mutex
	tokens map[string]time.Time
	gets   int
}

func newFakeMMDS(t *testing.T, doc string) *fakeMMDS {
	t.Helper()
	m := &fakeMMDS{tokens: map[string]time.Time{}}
	if err := json.Unmarshal([]byte(doc), &m.doc); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *fakeMMDS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/latest/api/token" {
		if r.Method != http.MethodPut {
			http.Error(w, "Not allowed HTTP method.", http.StatusMethodNotAllowed)
			return
		}
		if r.Header.Get("X-Forwarded-For") != "" {
			http.Error(w, "Invalid header. Reason: Unsupported header name. Key: X-Forwarded-For", http.StatusBadRequest)
			return
		}
		ttl, err := strconv.Atoi(r.Header.Get("X-metadata-token-ttl-seconds"))
		if err != nil || ttl < 1 || ttl > 21600 {
			http.Error(w, "Invalid time to live value provided for token", http.StatusBadRequest)
			return
		}
		b := make([]byte, 32)
		rand.Read(b)
		token := hex.EncodeToString(b)
		m.mu.Lock()
		m.tokens[token] = time.Now().Add(time.Duration(ttl) * time.Second)
		m.mu.Unlock()
		w.Write([]byte(token))
		return
	}
	if r.Method != http.MethodGet {
		http.Error(w, "Not allowed HTTP method.", http.StatusMethodNotAllowed)
		return
	}
	m.mu.Lock()
	expiry, ok := m.tokens[r.Header.Get("X-metadata-token")]
	m.gets++
	m.mu.Unlock()
	if !ok || time.Now().After(expiry) {
		http.Error(w, "No MMDS token provided. Use `X-metadata-token` header to specify the session token.", http.StatusUnauthorized)
		return
	}
	v := m.doc
	for _, part := range strings.Split(strings.Trim(r.URL.Path, "/"), "/") {
		if part == "" {
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			http.NotFound(w, r)
			return
		}
		if v, ok = obj[part]; !ok {
			http.NotFound(w, r)
			return
		}
	}
	if r.Header.Get("Accept") == "application/json" && !m.imdsCompat {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
		return
	}
	switch v := v.(type) {
	case string:
		w.Write([]byte(v))
	case map[string]any:
		var keys []string
		for k, sub := range v {
			if _, ok := sub.(map[string]any); ok {
				k += "/"
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.Write([]byte(strings.Join(keys, "\n")))
	default:
		http.Error(w, "Cannot retrieve value. The value has an invalid format.", http.StatusNotImplemented)
	}
}

const mmdsNoCloudDoc = `{
  "meta-data": {"instance-id": "fc-0001", "local-hostname": "waf-fc"},
  "user-data": "#cloud-config\nhostname: waf-fc\n",
  "network-config": {"version": 2, "ethernets": {"eth0": {"dhcp4": true}}}
}`

const mmdsEC2Doc = `{
  "latest": {
    "meta-data": {"instance-id": "i-fc0002", "local-hostname": "waf-fc2", "placement": {"availability-zone": "lab-1a"}},
    "user-data": "#cloud-config\nhostname: waf-fc2\n"
  }
}`

func TestFirecrackerMMDS(t *testing.T) {
	for _, tc := range []struct {
		name, doc     string
		imdsCompat    bool
		instance      string
		hostname      string
		userData      string
		networkConfig string
	}{
		{name: "NoCloud's shape as JSON", doc: mmdsNoCloudDoc, instance: "fc-0001", hostname: "waf-fc", userData: "waf-fc", networkConfig: `"dhcp4":true`},
		{name: "EC2's shape as JSON", doc: mmdsEC2Doc, instance: "i-fc0002", hostname: "waf-fc2", userData: "waf-fc2"},
		{name: "EC2's shape, text form only (imds_compat)", doc: mmdsEC2Doc, imdsCompat: true, instance: "i-fc0002", hostname: "waf-fc2", userData: "waf-fc2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newFakeMMDS(t, tc.doc)
			m.imdsCompat = tc.imdsCompat
			srv := httptest.NewServer(m)
			t.Cleanup(srv.Close)
			s, err := firecrackerMMDS{}.Fetch(context.Background(), testEnv(srv.URL, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			if s.InstanceID != tc.instance || s.LocalHostname != tc.hostname || !strings.Contains(string(s.UserData), tc.userData) ||
				!strings.Contains(string(s.NetworkConfig), tc.networkConfig) || s.Datasource != "Firecracker" || s.Subplatform != "metadata ("+srv.URL+")" {
				t.Errorf("seed: %+v", s)
			}
		})
	}
}

func TestFirecrackerMMDSErrors(t *testing.T) {
	m := newFakeMMDS(t, `{"something": "else"}`)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	_, err := firecrackerMMDS{}.Fetch(context.Background(), testEnv(srv.URL, nil, nil))
	if err == nil || !strings.Contains(err.Error(), "holds no seed") {
		t.Errorf("a document without a seed: %v", err)
	}
	// EC2's token headers are not MMDS's: the Ec2 source gets nothing.
	m = newFakeMMDS(t, mmdsEC2Doc)
	srv = httptest.NewServer(m)
	t.Cleanup(srv.Close)
	if _, err := (ec2Datasource{}).Fetch(context.Background(), testEnv(srv.URL, nil, nil)); err == nil {
		t.Error("the Ec2 source read MMDS with EC2's token headers")
	}
}

func TestFirecrackerProbe(t *testing.T) {
	for _, tc := range []struct {
		dmi     MapDMI
		cmdline string
		want    Verdict
	}{
		{MapDMI{}, "console=ttyS0 reboot=k panic=1 pci=off virtio_mmio.device=4K@0xd0000000:5 root=/dev/vda", Found},
		{MapDMI{}, "console=ttyS0 root=/dev/vda", NotFound},
		{MapDMI{"sys_vendor": "QEMU"}, "virtio_mmio.device=4K@0xd0000000:5", NotFound},
	} {
		ev, err := firecrackerMMDS{}.Probe(context.Background(), &Env{DMI: tc.dmi, Cmdline: tc.cmdline})
		if err != nil || ev.Verdict != tc.want {
			t.Errorf("%v %q: %+v, %v; want %v", tc.dmi, tc.cmdline, ev, err, tc.want)
		}
	}
}

// In a namespace of its own, the guest's side has a link-local IPv4
// address and MMDS answers on 169.254.169.254, Firecracker's default:
// the source's default URL reads it.
func TestFirecrackerMMDSInNamespace(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	nstest.Veth(t, "eth0", "mmds", "06:00:ac:10:00:02")
	for name, cidr := range map[string]string{"eth0": "169.254.0.2/16", "mmds": "169.254.169.254/16"} {
		l, err := netlink.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := netlink.ParseAddr(cidr)
		if err := netlink.AddrAdd(l, a); err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	m := newFakeMMDS(t, mmdsNoCloudDoc)
	serveOn(t, "169.254.169.254:80", m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := firecrackerMMDS{}.Fetch(ctx, testEnv("", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if s.InstanceID != "fc-0001" || s.Subplatform != "metadata ("+FirecrackerMMDSURL+")" {
		t.Errorf("seed from %q: %q", s.Subplatform, s.InstanceID)
	}
}
