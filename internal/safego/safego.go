// Package safego starts goroutines that cannot take PID 1 down. In Go a
// panic that no deferred recover catches ends the whole process, and when
// that process is PID 1 the kernel panics with it; a recover in main does
// not reach other goroutines. Every goroutine seedinit starts goes
// through Go, so that a bug in a datasource probe, the DHCP client, module
// loading or key generation costs that piece of work, not the boot.
package safego

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync"
)

// PanicError is a recovered panic, with the goroutine's name and stack.
type PanicError struct {
	Name  string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("%s panicked: %v", e.Name, e.Value)
}

var (
	mu       sync.Mutex
	reporter = func(e *PanicError) {
		fmt.Fprintf(os.Stderr, "seedinit: %v\n%s", e, e.Stack)
	}
)

// SetReporter sets where recovered panics are reported (PID 1: its log on
// the console and /dev/kmsg); the default writes to stderr.
func SetReporter(f func(*PanicError)) {
	mu.Lock()
	reporter = f
	mu.Unlock()
}

func report(e *PanicError) {
	mu.Lock()
	f := reporter
	mu.Unlock()
	// A reporter that panics itself must not undo the recovery.
	defer func() { recover() }()
	f(e)
}

// Go runs fn on a new goroutine named name. A panic in fn is recovered,
// reported, and handed to onPanic (when not nil) as a *PanicError, so that
// whoever waits for fn's result hears of the failure instead of waiting
// forever. fn's own deferred calls (a WaitGroup's Done) run before onPanic.
func Go(name string, fn func(), onPanic func(error)) {
	go func() {
		defer Recover(name, onPanic)
		fn()
	}()
}

// Recover is Go's recovery for code that must run on a goroutine it did
// not start (a deferred call at the top of it) or in PID 1's own main
// path: `defer safego.Recover("handoff", nil)`.
func Recover(name string, onPanic func(error)) {
	r := recover()
	if r == nil {
		return
	}
	e := &PanicError{Name: name, Value: r, Stack: debug.Stack()}
	report(e)
	if onPanic != nil {
		func() {
			defer func() {
				if r := recover(); r != nil {
					report(&PanicError{Name: name + " (its panic handler)", Value: r, Stack: debug.Stack()})
				}
			}()
			onPanic(e)
		}()
	}
}

// Run calls fn on the current goroutine and returns its panic, if any, as
// an error: for steps that must not stop the ones after them.
func Run(name string, fn func()) (err error) {
	defer Recover(name, func(e error) { err = e })
	fn()
	return nil
}
