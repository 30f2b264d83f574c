package boot

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/serve/state"
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
	errs, final, err := state.ParseReport([]byte(bodies[0]))
	if err != nil {
		t.Fatalf("state.ParseReport: %v\n%s", err, bodies[0])
	}
	var rec state.Record
	state.ApplyReport(&rec, state.Report{Errors: errs, Final: final})
	if rec.State != state.Failed || !strings.Contains(strings.Join(errs, "\n"), reason) {
		t.Errorf("state %s, errors %q: want failed with %q", rec.State, errs, reason)
	}

	// Stages that named no report URL: nothing is sent, nothing logged.
	logBuf.Reset()
	(&PID1{Log: slog.New(slog.NewTextHandler(&logBuf, nil))}).reportRefusal(root)
	if len(bodies) != 1 || logBuf.Len() != 0 {
		t.Errorf("no report URL: %d reports, log %q", len(bodies), logBuf.String())
	}
}
