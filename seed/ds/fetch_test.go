package ds

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
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
