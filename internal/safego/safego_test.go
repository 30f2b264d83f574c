package safego

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func capture(t *testing.T) *[]*PanicError {
	t.Helper()
	var got []*PanicError
	var mu sync.Mutex
	SetReporter(func(e *PanicError) { mu.Lock(); got = append(got, e); mu.Unlock() })
	t.Cleanup(func() { SetReporter(func(e *PanicError) {}) })
	return &got
}

func TestGoRecoversAndReports(t *testing.T) {
	got := capture(t)
	var wg sync.WaitGroup
	wg.Add(1)
	errc := make(chan error, 1)
	Go("probe", func() {
		defer wg.Done()
		items := strings.Fields("")
		_ = items[len(items)] // out of range: a runtime panic
	}, func(err error) { errc <- err })
	select {
	case err := <-errc:
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Name != "probe" || !strings.Contains(err.Error(), "index out of range") {
			t.Fatalf("onPanic got %v", err)
		}
		if !strings.Contains(string(pe.Stack), "safego_test.go") {
			t.Errorf("stack does not show where it panicked:\n%s", pe.Stack)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("onPanic was never called")
	}
	wg.Wait() // fn's own defers ran
	if len(*got) != 1 {
		t.Fatalf("reported %d panics, want 1", len(*got))
	}
}

func TestGoWithoutPanicCallsNothing(t *testing.T) {
	got := capture(t)
	done := make(chan struct{})
	Go("quiet", func() { close(done) }, func(error) { t.Error("onPanic called without a panic") })
	<-done
	time.Sleep(10 * time.Millisecond)
	if len(*got) != 0 {
		t.Fatalf("reported %v", *got)
	}
}

func TestRunReturnsPanicAsError(t *testing.T) {
	capture(t)
	if err := Run("step", func() {}); err != nil {
		t.Fatalf("Run of a quiet step = %v", err)
	}
	err := Run("step", func() { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "step panicked: boom") {
		t.Fatalf("Run = %v", err)
	}
}

func TestPanickingHandlersAreContained(t *testing.T) {
	got := capture(t)
	err := Run("outer", func() {
		defer Recover("inner", func(error) { panic("handler") })
		panic("first")
	})
	if err != nil {
		t.Fatalf("the inner recovery should have stopped the panic, Run = %v", err)
	}
	if len(*got) != 2 {
		t.Fatalf("reported %d, want the panic and its handler's", len(*got))
	}
	SetReporter(func(*PanicError) { panic("reporter") })
	if err := Run("x", func() { panic("y") }); err == nil {
		t.Fatal("a panicking reporter lost the error")
	}
}
