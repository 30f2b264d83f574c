package devprobe

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedinit/seedinit/internal/testenv"
)

func TestMain(m *testing.M) {
	// The helpers these tests start are this test binary again.
	ServeIfHelper()
	os.Exit(m.Run())
}

func init() {
	Handle("test-echo", func(arg string, opening func(string) bool) (any, error) {
		if !opening(arg) {
			return "skipped " + arg, nil
		}
		return "read " + arg, nil
	})
	// A device that never answers: the read blocks for good. (A real one
	// blocks in the kernel, where not even a signal reaches it.)
	Handle("test-hang", func(arg string, opening func(string) bool) (any, error) {
		if !opening(arg) {
			return "skipped " + arg, nil
		}
		time.Sleep(time.Hour)
		return nil, nil
	})
	Handle("test-panic", func(arg string, opening func(string) bool) (any, error) {
		panic("a bug in a probe")
	})
}

// A probe that never answers costs its caller Bound, not the boot: the
// helper is abandoned, the device skipped while it is stuck, and the
// probes after it run in a new helper.
func TestStalledProbeIsAbandoned(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		testenv.Skipf(t, "no path to this test binary: %v", err)
	}
	var said []string
	Enable(exe, func(msg string, args ...any) { said = append(said, msg) })
	t.Cleanup(Disable)
	old := Bound
	Bound = time.Second
	t.Cleanup(func() { Bound = old })

	var got string
	if err := Call("test-echo", "vda", &got); err != nil || got != "read vda" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	err = Call("test-hang", "sr0", &got)
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("a probe that never answers: %v, want ErrStalled", err)
	}
	if s := Stalled(); !slices.Equal(s, []string{"sr0"}) {
		t.Errorf("stalled devices %q, want sr0", s)
	}
	if len(said) != 1 || !strings.Contains(said[0], "did not answer") {
		t.Errorf("the log heard %q", said)
	}
	// The stuck device is skipped by the next probes, which still work.
	if err := Call("test-hang", "sr0", &got); err != nil || got != "skipped sr0" {
		t.Errorf("the stuck device again: %q, %v; want it skipped at once", got, err)
	}
	if err := Call("test-echo", "vdb", &got); err != nil || got != "read vdb" {
		t.Errorf("another device after the stall: %q, %v", got, err)
	}
	// A panic in a probe is its error, in the helper as in process.
	if err := Call("test-panic", "x", &got); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("a probe that panics: %v", err)
	}
	Disable()
	if err := Call("test-panic", "x", &got); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("a probe that panics, in process: %v", err)
	}
	if err := Call("test-echo", "vdc", &got); err != nil || got != "read vdc" {
		t.Errorf("in process: %q, %v", got, err)
	}
}
