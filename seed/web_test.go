package seed

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
