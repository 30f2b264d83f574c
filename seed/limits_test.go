package seed

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// blackhole accepts connections on 127.0.0.1 and never answers them, like
// a metadata proxy that hangs.
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// TestIncludesShareOneBudget: 20 URLs that accept and never answer used to
// take FetchTimeout (10 s) each, 200 s in all. They now share one budget:
// the first fetch waits out what there is of it, the others are not tried.
func TestIncludesShareOneBudget(t *testing.T) {
	base := blackhole(t)
	var ud strings.Builder
	ud.WriteString("#include\n")
	for i := range 20 {
		fmt.Fprintf(&ud, "%s/part-%d\n", base, i)
	}
	budget := 300 * time.Millisecond
	got, err := ProcessUserData(context.Background(), []byte(ud.String()), Options{IncludeBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Warnings) != 20 {
		t.Fatalf("%d warnings, want one per URL: %q", len(got.Warnings), got.Warnings)
	}
	if w := got.Warnings[0]; !strings.Contains(w, base+"/part-0: stopped at the end of the 300ms for all of user-data's includes") {
		t.Errorf("first warning %q, want the first URL stopped by the budget", w)
	}
	for i, w := range got.Warnings[1:] {
		if want := fmt.Sprintf("%s/part-%d: the 300ms for all of user-data's includes is used up; skipped", base, i+1); !strings.Contains(w, want) {
			t.Errorf("warning %q, want %q", w, want)
		}
	}
}

// TestIncludeBudgetBoundsCustomFetch: a Fetch of the caller's gets the
// budget as its context's deadline.
func TestIncludeBudgetBoundsCustomFetch(t *testing.T) {
	var deadlines []time.Time
	fetch := func(ctx context.Context, url string) ([]byte, error) {
		d, ok := ctx.Deadline()
		if !ok {
			t.Errorf("fetch of %s has no deadline", url)
		}
		deadlines = append(deadlines, d)
		return []byte("#cloud-config\na: 1\n"), nil
	}
	_, err := ProcessUserData(context.Background(), []byte("#include\nhttp://a/1\nhttp://a/2\n"), Options{Fetch: fetch})
	if err != nil {
		t.Fatal(err)
	}
	if len(deadlines) != 2 || !deadlines[0].Equal(deadlines[1]) {
		t.Errorf("deadlines %v, want one shared deadline", deadlines)
	}
}

func TestPartsLimit(t *testing.T) {
	mime := func(n int) string {
		var b strings.Builder
		b.WriteString("Content-Type: multipart/mixed; boundary=B\nMIME-Version: 1.0\n\n")
		for i := range n {
			fmt.Fprintf(&b, "--B\nContent-Type: text/cloud-config\n\n#cloud-config\nk%d: v\n", i)
		}
		b.WriteString("--B--\n")
		return b.String()
	}
	archive := func(n int) string {
		var b strings.Builder
		b.WriteString("#cloud-config-archive\n")
		for i := range n {
			fmt.Fprintf(&b, "- {type: text/cloud-config, content: 'k%d: v'}\n", i)
		}
		return b.String()
	}
	tests := []struct {
		name, in, wantErr string
		wantParts         int
	}{
		{name: "MIME at the limit", in: mime(maxParts - 1), wantParts: maxParts - 1},
		{name: "MIME over the limit", in: mime(maxParts + 1), wantErr: "read user-data: parse MIME: more than 10000 MIME parts"},
		{name: "archive over the limit", in: archive(maxParts + 1), wantErr: "read user-data: more than 10000 parts (with its archives and includes)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ProcessUserData(context.Background(), []byte(tc.in), Options{Fetch: noFetch})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("ProcessUserData: %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(got.Parts) != tc.wantParts {
				t.Fatalf("ProcessUserData: %v, %d parts, want %d", err, len(got.Parts), tc.wantParts)
			}
		})
	}
}
