package dhcp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seedinit/seedinit/internal/safego"
)

// A panic in every NIC's exchange made AcquireAny return no lease and no
// error (each worker's Done ran before its panic was reported, the
// results were closed, and the report was lost), and its caller in PID 1
// took the nil lease for a good one. Every way an exchange ends must
// reach AcquireAny's answer.
func TestAcquireAnyReportsPanickedExchanges(t *testing.T) {
	// PID 1 writes each panic's stack to the console, which takes a
	// while: the report of a panic comes late.
	safego.SetReporter(func(*safego.PanicError) { time.Sleep(20 * time.Millisecond) })
	t.Cleanup(func() { safego.SetReporter(func(*safego.PanicError) {}) })
	for _, tc := range []struct {
		name   string
		panics map[string]bool
	}{
		{"every NIC panics", map[string]bool{"eth0": true, "eth1": true}},
		{"one panics, one fails", map[string]bool{"eth0": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acquireOne = func(ctx context.Context, iface string, opts Options) (*Lease, error) {
				if tc.panics[iface] {
					panic("a bug in the exchange on " + iface)
				}
				return nil, errors.New("no offer on " + iface)
			}
			t.Cleanup(func() { acquireOne = Acquire })
			for range 5 { // the lost report was a race: try it more than once
				lease, err := AcquireAny(context.Background(), []string{"eth0", "eth1"}, Options{})
				if lease != nil || err == nil {
					t.Fatalf("AcquireAny = %v, %v; want no lease and an error", lease, err)
				}
			}
		})
	}
}

// An exchange that does not end with its context (a netlink call stuck
// in the kernel) may not hold AcquireAny past its context and a grace.
func TestAcquireAnyDoesNotWaitForAStuckExchange(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	acquireOne = func(ctx context.Context, iface string, opts Options) (*Lease, error) {
		<-release // ignores ctx
		return nil, errors.New("late")
	}
	t.Cleanup(func() { acquireOne = Acquire })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := AcquireAny(ctx, []string{"eth0"}, Options{})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("no error for an exchange that never ended")
		}
	case <-time.After(time.Minute):
		// Not a timing claim: an AcquireAny that waits never returns.
		t.Fatal("AcquireAny still waits for an exchange that ignores its context")
	}
}
