package ds

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedinit/seedinit/seed/ds/dstest"
)

// openStackServer serves the metadata service layout: /openstack lists
// versions, each with the fixtures.
func openStackServer(t *testing.T, versions ...string) *httptest.Server {
	t.Helper()
	files := map[string]string{"/openstack": strings.Join(versions, "\n") + "\n"}
	for _, v := range versions {
		for _, f := range []string{"meta_data.json", "network_data.json", "vendor_data.json", "user_data"} {
			files["/openstack/"+v+"/"+f] = fixture(t, "openstack/"+f)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// quickFetch keeps hostile-server tests short.
var quickFetch = FetchOptions{Timeout: 300 * time.Millisecond, Retries: 1, Backoff: 10 * time.Millisecond, MaxBytes: 1 << 20}

func TestOpenStackService(t *testing.T) {
	srv := openStackServer(t, "2012-08-10", "2013-04-04", "2018-08-27", "latest")
	env := newTestEnv(t, nil, MapDMI{"product_name": "OpenStack Nova"}, "")
	env.Config.Datasource = map[string]map[string]any{"OpenStack": {"metadata_urls": []any{srv.URL}}}
	ev, err := openStack{}.Probe(context.Background(), env)
	if err != nil || ev.Verdict != Found {
		t.Fatalf("Probe = %+v, %v", ev, err)
	}
	s, err := openStack{}.Fetch(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if s.InstanceID != "b0fa911b-69d4-4476-bbe2-1c92bff6535c" || s.NetworkFormat != "network_data.json" ||
		s.Subplatform != "metadata ("+srv.URL+")" || s.CloudName != "openstack" || len(s.PublicKeys) != 1 {
		t.Errorf("seed = %+v", s)
	}
}

func TestOpenStackProbe(t *testing.T) {
	cases := []struct {
		dmi  MapDMI
		devs bool
		want Verdict
	}{
		{MapDMI{"product_name": "OpenStack Compute"}, false, Found},
		{MapDMI{"chassis_asset_tag": "OpenTelekomCloud"}, false, Found},
		{MapDMI{"chassis_asset_tag": "HUAWEICLOUD"}, false, Found},
		{MapDMI{"product_name": "OpenStack Nova"}, true, NotFound}, // the config drive wins
		{MapDMI{"sys_vendor": "QEMU"}, false, NotFound},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var devs FileDevices
			if tc.devs {
				devs = FileDevices{"/dev/sr0": dstest.ISO(t, "config-2", openStackTree(t, "latest"), "-r")}
			}
			env := newTestEnv(t, devs, tc.dmi, "")
			ev, _ := openStack{}.Probe(context.Background(), env)
			if ev.Verdict != tc.want {
				t.Errorf("verdict %s (%s), want %s", ev.Verdict, ev.Reason, tc.want)
			}
		})
	}
}

// hostile servers: each must give a clear error, quickly.
func openStackHostileHandlers() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"500": func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) },
		"hang": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		},
		"slow body": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			w.Write([]byte("2012-08-10\n"))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		},
		"redirect loop": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
		},
		"huge": func(w http.ResponseWriter, r *http.Request) {
			chunk := strings.Repeat("a", 64<<10)
			for i := 0; i < 64; i++ {
				if _, err := w.Write([]byte(chunk)); err != nil {
					return
				}
			}
		},
		"truncated": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			w.Write([]byte(`{"uuid": "x"`))
		},
		"invalid json": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/openstack" {
				w.Write([]byte("latest\n"))
				return
			}
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html>not json</html>"))
		},
	}
}

func TestOpenStackHostile(t *testing.T) {
	want := map[string]string{
		"500":           "HTTP 500",
		"hang":          "deadline exceeded",
		"slow body":     "deadline exceeded",
		"redirect loop": "redirects",
		"huge":          "size limit",
		"truncated":     "unexpected EOF",
		"invalid json":  "decode JSON",
	}
	for name, h := range openStackHostileHandlers() {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			env := newTestEnv(t, nil, nil, "")
			env.Config.Fetch = quickFetch
			env.Endpoint = srv.URL
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := openStack{}.Fetch(ctx, env)
			if err == nil || !strings.Contains(err.Error(), want[name]) {
				t.Fatalf("error = %v, want one mentioning %q", err, want[name])
			}
			if ctx.Err() != nil {
				t.Errorf("the fetch used up the whole test deadline")
			}
		})
	}
}

func TestOpenStackURLs(t *testing.T) {
	settings := func(v any) Config {
		return Config{Datasource: map[string]map[string]any{"openstack": {"metadata_urls": v}}}
	}
	for _, tt := range []struct {
		name string
		env  Env
		want []string
	}{
		{"defaults", Env{}, []string{openStackMetadataURL}},
		{"defaults with the ephemeral NIC", Env{Interface: "eth0"}, []string{openStackMetadataURL, "http://[fe80::a9fe:a9fe%25eth0]"}},
		{"a list", Env{Config: settings([]any{" http://a ", "", 7, "http://b"}), Interface: "eth0"}, []string{"http://a", "http://b"}},
		{"a string", Env{Config: settings("http://c")}, []string{"http://c"}},
		{"an empty list falls back", Env{Config: settings([]any{})}, []string{openStackMetadataURL}},
		{"an explicit endpoint wins", Env{Endpoint: "http://127.0.0.1:8080/", Config: settings("http://c")}, []string{"http://127.0.0.1:8080"}},
	} {
		if got := openStackURLs(&tt.env); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// multipartOf lays its message out byte for byte as mime/multipart's
// Writer does (whose NewWriter would block PID 1 on crypto/rand for the
// boundary), and each message gets a boundary of its own.
func TestMultipartOfMatchesMimeMultipart(t *testing.T) {
	for _, tt := range []struct {
		name  string
		parts [][]byte
	}{
		{"none", nil},
		{"one", [][]byte{[]byte("#cloud-config\na: 1\n")}},
		{"two", [][]byte{[]byte("#cloud-config\na: 1\n"), []byte("#!/bin/sh\necho\r\n")}},
		{"empty parts", [][]byte{{}, {}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const boundary = "0123456789abcdef0123456789abcdef"
			var body bytes.Buffer
			w := multipart.NewWriter(&body)
			if err := w.SetBoundary(boundary); err != nil {
				t.Fatal(err)
			}
			for _, p := range tt.parts {
				h := textproto.MIMEHeader{}
				h.Set("Content-Type", "text/x-not-multipart")
				pw, _ := w.CreatePart(h)
				pw.Write(p)
			}
			w.Close()
			want := "Content-Type: multipart/mixed; boundary=\"" + boundary + "\"\nMIME-Version: 1.0\n\n" + body.String()
			if got := string(multipartWith(boundary, tt.parts...)); got != want {
				t.Errorf("multipartWith:\n%q\nwant\n%q", got, want)
			}
		})
	}
	a, b := multipartOf([]byte("x")), multipartOf([]byte("x"))
	re := regexp.MustCompile(`^Content-Type: multipart/mixed; boundary="[0-9a-f]{32}"\n`)
	if !re.Match(a) || bytes.Equal(a, b) {
		t.Errorf("multipartOf boundaries: %q and %q", a[:80], b[:80])
	}
}
