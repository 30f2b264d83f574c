package ds

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestFetcher(t *testing.T) {
	var calls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/flaky", func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.NotFound(w, r)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/flaky", http.StatusFound)
	})
	mux.HandleFunc("/to-file", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 2000))
	})
	mux.HandleFunc("/echo-token", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	cases := []struct {
		name      string
		path      string
		wantBody  string
		errHas    string
		wantCalls int32
	}{
		{"retries 5xx then succeeds", "/flaky", "ok", "", 3},
		{"404 is final", "/gone", "", "HTTP 404", 1},
		{"redirect followed", "/redirect", "ok", "", 3},
		{"redirect to file refused", "/to-file", "", "only http and https", 0},
		{"size cap", "/big", "", "size limit", 0},
		{"query string never shown", "/echo-token?token=SECRET", "", "HTTP 403", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			var logs bytes.Buffer
			f := NewFetcher(FetchOptions{Timeout: time.Second, Retries: 3, Backoff: time.Millisecond, MaxBytes: 1000},
				slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			resp, err := f.Get(context.Background(), srv.URL+tc.path, http.Header{"X-Token": {"SECRET"}})
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("error = %v, want %q", err, tc.errHas)
				}
				if strings.Contains(err.Error(), "SECRET") || strings.Contains(logs.String(), "SECRET") {
					t.Errorf("a secret leaked: %v\n%s", err, logs.String())
				}
			} else if err != nil {
				t.Fatal(err)
			} else if string(resp.Body) != tc.wantBody {
				t.Errorf("body %q", resp.Body)
			}
			if tc.wantCalls > 0 && calls.Load() != tc.wantCalls {
				t.Errorf("%d calls, want %d", calls.Load(), tc.wantCalls)
			}
		})
	}
}

func TestFetcherRespectsContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	f := NewFetcher(FetchOptions{Timeout: 10 * time.Second, Retries: 5}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	outer, outerCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer outerCancel()
	done := make(chan error, 1)
	go func() { _, err := f.Get(ctx, srv.URL, nil); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a hanging server gave no error")
		}
	case <-outer.Done():
		t.Fatal("Get outlived its context")
	}
}

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"http://u:p@h/x?token=1#f": "http://REDACTED@h/x?REDACTED",
		"http://h/a/b":             "http://h/a/b",
		"::bad?x=1":                "::bad",
	}
	for in, want := range cases {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// The Fetcher sends the metadata headers and the IMDSv2 token through
// a metadata service's redirects within itself, and never to another
// host (here another port of 127.0.0.1) that a redirect names, even when
// a later redirect leads back.
func TestFetcherRedirectDropsMetadataHeadersOffOrigin(t *testing.T) {
	metadata := http.Header{
		"X-Aws-Ec2-Metadata-Token": {"TOKEN-SECRET"},
		"Metadata":                 {"true"},
		"Metadata-Flavor":          {"Google"},
		"Authorization":            {"Bearer Oracle"},
	}
	var mu sync.Mutex
	seen := map[string]http.Header{}
	var originURL, otherURL string
	handler := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/final":
				mu.Lock()
				seen[name] = r.Header.Clone()
				mu.Unlock()
				w.Write([]byte("ok"))
			case "/same":
				http.Redirect(w, r, "/final", http.StatusMovedPermanently)
			case "/away":
				http.Redirect(w, r, otherURL+"/final", http.StatusFound)
			case "/same-then-away":
				http.Redirect(w, r, "/away", http.StatusFound)
			case "/round-trip":
				http.Redirect(w, r, otherURL+"/back", http.StatusFound)
			case "/back":
				http.Redirect(w, r, originURL+"/final", http.StatusFound)
			}
		}
	}
	origin := httptest.NewServer(handler("origin"))
	defer origin.Close()
	other := httptest.NewServer(handler("other"))
	defer other.Close()
	originURL, otherURL = origin.URL, other.URL

	f := NewFetcher(FetchOptions{Retries: NoRetries}, nil)
	for _, tt := range []struct {
		path    string
		reaches string
		kept    bool
	}{
		{"/same", "origin", true},
		{"/away", "other", false},
		{"/same-then-away", "other", false},
		{"/round-trip", "origin", false},
	} {
		t.Run(tt.path, func(t *testing.T) {
			mu.Lock()
			clear(seen)
			mu.Unlock()
			if _, err := f.Get(context.Background(), origin.URL+tt.path, metadata.Clone()); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			h := seen[tt.reaches]
			mu.Unlock()
			if h == nil {
				t.Fatalf("the %s server's /final was not reached", tt.reaches)
			}
			for k, v := range metadata {
				if present := h.Get(k) == v[0]; present != tt.kept {
					t.Errorf("%s at the %s server: %q, want it there: %v", k, tt.reaches, h.Get(k), tt.kept)
				}
			}
			if h.Get("User-Agent") != "seedinit" {
				t.Errorf("User-Agent = %q", h.Get("User-Agent"))
			}
		})
	}
}
