package boot

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/seedinit/seedinit/apply/stages"
)

// When seedinit.strict refuses the handoff no final stage runs, so PID 1
// sends the report itself: the server reads the instance as failed, with
// the refusal among its errors.
func TestStrictRefusalIsReported(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	root := strictRoot(t, "i-1", "")
	const reason = "1 module error(s): bootcmd: exit status 1"
	if err := stages.NoteHandoffRefused(root, "seedinit.strict: the handoff to the real init was refused: "+reason); err != nil {
		t.Fatal(err)
	}
	var logBuf strings.Builder
	p := &PID1{Log: slog.New(slog.NewTextHandler(&logBuf, nil)), reportURL: srv.URL + "/report/i-1", reportFrom: "meta-data seedinit-report-url"}
	p.reportRefusal(root)
	t.Log(logBuf.String())
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 {
		t.Fatalf("the server got %d reports, want 1", len(bodies))
	}
	var report struct {
		Status string
		Errors []string
	}
	if err := json.Unmarshal([]byte(bodies[0]), &report); err != nil {
		t.Fatalf("the report is not status's JSON: %v\n%s", err, bodies[0])
	}
	if report.Status != "error" || !strings.Contains(strings.Join(report.Errors, "\n"), reason) {
		t.Errorf("status %s, errors %q: want error with %q", report.Status, report.Errors, reason)
	}

	// Stages that named no report URL: nothing is sent, nothing logged.
	logBuf.Reset()
	(&PID1{Log: slog.New(slog.NewTextHandler(&logBuf, nil))}).reportRefusal(root)
	if len(bodies) != 1 || logBuf.Len() != 0 {
		t.Errorf("no report URL: %d reports, log %q", len(bodies), logBuf.String())
	}
}
