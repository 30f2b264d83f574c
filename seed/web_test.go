package seed

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWeb(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "hello")
		case "/echo":
			body, _ := io.ReadAll(r.Body)
			io.WriteString(w, r.Method+" "+r.Header.Get("Content-Type")+" "+r.UserAgent()+" "+string(body))
		case "/big":
			w.Write(make([]byte, 100))
		case "/denied":
			http.Error(w, "go away", http.StatusForbidden)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/slow":
			time.Sleep(200 * time.Millisecond)
		}
	}))
	defer srv.Close()
	ctx := context.Background()

	if got, err := Web(ctx, WebRequest{URL: srv.URL + "/ok"}); err != nil || string(got) != "hello" {
		t.Errorf("GET /ok = %q, %v", got, err)
	}
	got, err := Web(ctx, WebRequest{Method: http.MethodPost, URL: srv.URL + "/echo", Body: []byte("a=1"),
		Header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
	if want := "POST application/x-www-form-urlencoded seedinit a=1"; err != nil || string(got) != want {
		t.Errorf("POST /echo = %q, %v; want %q", got, err, want)
	}

	_, err = Web(ctx, WebRequest{URL: srv.URL + "/denied?token=SECRET"})
	var status *WebStatusError
	if !errors.As(err, &status) || status.Code != 403 || status.Snippet != "go away" || err.Error() != "GET: HTTP status 403 Forbidden" {
		t.Errorf("GET /denied: %#v", err)
	}

	tests := []struct {
		name, url string
		req       WebRequest
		wantErr   string
		tooLarge  bool
	}{
		{name: "file scheme", url: "file:///etc/passwd", wantErr: `unsupported URL scheme "file"`},
		{name: "no scheme", url: "/etc/passwd", wantErr: `unsupported URL scheme ""`},
		{name: "redirect to file", url: srv.URL + "/to-file?token=SECRET", wantErr: `refusing a redirect to scheme "file"`},
		{name: "redirect loop", url: srv.URL + "/loop", wantErr: "stopped after 5 redirects"},
		{name: "over the size cap", url: srv.URL + "/big", req: WebRequest{MaxSize: 99}, wantErr: "more than 99 bytes", tooLarge: true},
		{name: "over the timeout", url: srv.URL + "/slow?token=SECRET", req: WebRequest{Timeout: 50 * time.Millisecond}, wantErr: "deadline exceeded"},
	}
	for _, tt := range tests {
		r := tt.req
		r.URL = tt.url
		_, err := Web(ctx, r)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.wantErr)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: error %q shows the URL's token", tt.name, err)
		}
		if errors.Is(err, ErrTooLarge) != tt.tooLarge {
			t.Errorf("%s: errors.Is(ErrTooLarge) = %v", tt.name, !tt.tooLarge)
		}
	}
	if got, err := Web(ctx, WebRequest{URL: srv.URL + "/big", MaxSize: 100}); err != nil || len(got) != 100 {
		t.Errorf("a body of exactly MaxSize: %d bytes, %v", len(got), err)
	}
}

// twoOrigins starts an "origin" server and an "other" one, both on
// 127.0.0.1 with ports of their own. Each records the headers its /final
// got; the origin redirects /same to its own /final, /away and /away-307
// to the other's /final, /same-then-away to its own /away, and /round-trip
// to the other's /back, which sends it back to the origin's /final.
func twoOrigins(t *testing.T) (origin string, got func(server string) http.Header) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]http.Header{}
	var originURL, otherURL string
	handler := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/final":
				mu.Lock()
				seen[name] = r.Header.Clone()
				mu.Unlock()
				io.WriteString(w, "ok")
			case "/same":
				http.Redirect(w, r, "/final", http.StatusFound)
			case "/away":
				http.Redirect(w, r, otherURL+"/final", http.StatusFound)
			case "/away-307":
				http.Redirect(w, r, otherURL+"/final", http.StatusTemporaryRedirect)
			case "/same-then-away":
				http.Redirect(w, r, "/away", http.StatusFound)
			case "/round-trip":
				http.Redirect(w, r, otherURL+"/back", http.StatusFound)
			case "/back":
				http.Redirect(w, r, originURL+"/final", http.StatusFound)
			}
		})
	}
	o := httptest.NewServer(handler("origin"))
	t.Cleanup(o.Close)
	other := httptest.NewServer(handler("other"))
	t.Cleanup(other.Close)
	originURL, otherURL = o.URL, other.URL
	return o.URL, func(server string) http.Header {
		mu.Lock()
		defer mu.Unlock()
		return seen[server]
	}
}

// The caller's headers (a token, a metadata header, Authorization) reach
// the origin through redirects within it, and never a host a redirect
// leads away to, even when a later redirect leads back.
func TestWebRedirectDropsHeadersOffOrigin(t *testing.T) {
	secrets := map[string]string{"Authorization": "Bearer SECRET", "X-Token": "SECRET", "Metadata": "true"}
	tests := []struct {
		path, method string
		// reaches is the server whose /final answers.
		reaches string
		// kept says whether the caller's headers arrive there.
		kept bool
	}{
		{path: "/same", reaches: "origin", kept: true},
		{path: "/away", reaches: "other"},
		{path: "/same-then-away", reaches: "other"},
		{path: "/round-trip", reaches: "origin"},
		{path: "/away-307", method: http.MethodPost, reaches: "other"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			origin, got := twoOrigins(t)
			headers := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
			for k, v := range secrets {
				headers[k] = v
			}
			var body []byte
			if tt.method == http.MethodPost {
				body = []byte("a=1")
			}
			if _, err := Web(context.Background(), WebRequest{Method: tt.method, URL: origin + tt.path + "?sig=SECRET", Header: headers, Body: body}); err != nil {
				t.Fatal(err)
			}
			h := got(tt.reaches)
			if h == nil {
				t.Fatalf("%s's /final was not reached", tt.reaches)
			}
			for k, v := range secrets {
				if present := h.Get(k) == v; present != tt.kept {
					t.Errorf("%s at the %s server: %q, want it there: %v", k, tt.reaches, h.Get(k), tt.kept)
				}
			}
			if !tt.kept && strings.Contains(h.Get("Referer"), "SECRET") {
				t.Errorf("Referer %q carries the first URL's query to the %s server", h.Get("Referer"), tt.reaches)
			}
			if h.Get("User-Agent") != "seedinit" {
				t.Errorf("User-Agent = %q", h.Get("User-Agent"))
			}
			if tt.method == http.MethodPost && h.Get("Content-Type") != "application/x-www-form-urlencoded" {
				t.Errorf("the body went on without its Content-Type: %q", h.Get("Content-Type"))
			}
		})
	}
}

func TestSameOrigin(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{"http://169.254.169.254/latest", "http://169.254.169.254:80/other", true},
		{"https://Example.com/a", "https://example.com:443/b", true},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8081/", false},
		{"http://example.com/", "https://example.com/", false},
		{"http://example.com/", "http://example.com.evil/", false},
		{"http://[fd00:ec2::254]/", "http://[fd00:ec2::254]:80/", true},
	} {
		t.Run(tt.a+" "+tt.b, func(t *testing.T) {
			a, _ := url.Parse(tt.a)
			b, _ := url.Parse(tt.b)
			if got := sameOrigin(a, b); got != tt.same {
				t.Errorf("sameOrigin = %v, want %v", got, tt.same)
			}
		})
	}
}
