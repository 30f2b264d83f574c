package boot

import (
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// stuckWriter is a console that stopped draining: each Write blocks until
// the test lets it go.
type stuckWriter struct {
	mu      sync.Mutex
	release chan struct{}
	got     strings.Builder
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.Write(p)
}

func (w *stuckWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.String()
}

// A serial console that stops draining (a loaded host, a flood of the
// kernel's own messages) blocked every log line of PID 1's, and PID 1
// with it: no line reached the console and the guest never reached its
// init. PID 1's log must go on whatever its outputs do, keep what it can,
// and say how many lines it dropped once an output drains again.
func TestLogDoesNotWaitForAStuckConsole(t *testing.T) {
	console := &stuckWriter{release: make(chan struct{})}
	kmsg := &stuckWriter{release: make(chan struct{})}
	out := newLogOutputs(console, kmsg)
	log := slog.New(slog.NewTextHandler(out.log, nil))
	const lines = 5000
	logged := make(chan struct{})
	go func() {
		for i := range lines {
			log.Info("a line", "n", i)
			fmt.Fprintf(out.console, "a module's console line %d\n", i)
		}
		close(logged)
	}()
	select {
	case <-logged:
	case <-time.After(time.Minute):
		// Not a timing claim: a log that waits for the console never ends.
		t.Fatal("PID 1's log waits for a console that does not drain")
	}
	if out.flush(100 * time.Millisecond) {
		t.Error("flush says a stuck console took everything")
	}
	close(console.release)
	close(kmsg.release)
	if !out.flush(time.Minute) {
		t.Fatal("flush did not finish once the console drained")
	}
	for name, c := range map[string]struct {
		w    *stuckWriter
		sent int
	}{"console": {console, 2 * lines}, "kmsg": {kmsg, lines}} {
		got := c.w.String()
		kept := strings.Count(got, "a line") + strings.Count(got, "module's console line")
		dropped := 0
		for _, m := range droppedNote.FindAllStringSubmatch(got, -1) {
			n, _ := strconv.Atoi(m[1])
			dropped += n
		}
		if kept == 0 || dropped == 0 || kept+dropped != c.sent {
			t.Errorf("%s: %d lines kept, %d said dropped, of %d; want the first kept and the rest counted:\n%s", name, kept, dropped, c.sent, tail(got))
		}
	}
	if strings.Contains(kmsg.String(), "module's console line") {
		t.Error("a module's console output went to the kernel log")
	}
}

func tail(s string) string {
	if len(s) > 500 {
		return s[len(s)-500:]
	}
	return s
}

var droppedNote = regexp.MustCompile(`seedinit: (\d+) lines dropped`)
