package boot

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/seedinit/seedinit/internal/safego"
)

// A serial console can stop draining: on a loaded host the emulated UART
// is slow, and the kernel's own messages (a flood of a failing disk's
// errors) take it first. A write to it then blocks, and a PID 1 that
// logs straight to it stops with it. So PID 1's log and its modules'
// console output go through a bounded queue per output, written by a
// goroutine of its own: a line that does not fit is dropped and counted,
// and the count is said once that output drains again. Nothing PID 1
// does waits for an output, except the handoff's last flush, which is
// bounded.

// queueMaxLines and queueMaxBytes bound what waits for one output.
const (
	queueMaxLines = 1000
	queueMaxBytes = 256 << 10
)

// outputQueue writes what it is given to out, in order, from its own
// goroutine.
type outputQueue struct {
	out io.Writer

	mu      sync.Mutex
	items   [][]byte
	bytes   int
	dropped int
	writing bool
	wake    chan struct{} // the writer has work
	drained chan struct{} // the writer found the queue empty
}

func newOutputQueue(out io.Writer, name string) *outputQueue {
	q := &outputQueue{out: out, wake: make(chan struct{}, 1), drained: make(chan struct{}, 1)}
	safego.Go("write to "+name, q.run, nil)
	return q
}

// Write queues a copy of p, or drops it when the queue is full; it never
// waits for the output.
func (q *outputQueue) Write(p []byte) (int, error) {
	q.mu.Lock()
	if len(q.items) >= queueMaxLines || q.bytes+len(p) > queueMaxBytes {
		q.dropped++
		q.mu.Unlock()
		return len(p), nil
	}
	q.items = append(q.items, append([]byte(nil), p...))
	q.bytes += len(p)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (q *outputQueue) run() {
	for range q.wake {
		for {
			q.mu.Lock()
			if len(q.items) == 0 {
				dropped := q.dropped
				q.dropped = 0
				q.writing = dropped > 0
				q.mu.Unlock()
				if dropped == 0 {
					break
				}
				fmt.Fprintf(q.out, "seedinit: %d lines dropped: this output did not keep up\n", dropped)
				continue
			}
			item := q.items[0]
			q.items = q.items[1:]
			q.bytes -= len(item)
			q.writing = true
			q.mu.Unlock()
			q.out.Write(item)
		}
		select {
		case q.drained <- struct{}{}:
		default:
		}
	}
}

// idle reports whether everything queued was written.
func (q *outputQueue) idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) == 0 && q.dropped == 0 && !q.writing
}

// flush waits until everything queued was written, at most until
// deadline; it reports whether it was.
func (q *outputQueue) flush(deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for !q.idle() {
		select {
		case <-q.drained:
		case <-t.C:
			return q.idle()
		}
	}
	return true
}

// logOutputs are PID 1's outputs: log carries its log lines to the
// console and the kernel log, console its modules' console output (host
// key fingerprints, final_message) to the console alone.
type logOutputs struct {
	log, console io.Writer
	queues       []*outputQueue
}

// newLogOutputs queues for the console and, when not nil, the kernel log.
func newLogOutputs(console, kmsg io.Writer) logOutputs {
	c := newOutputQueue(console, "the console")
	o := logOutputs{log: c, console: c, queues: []*outputQueue{c}}
	if kmsg != nil {
		k := newOutputQueue(kmsg, "the kernel log")
		o.log = io.MultiWriter(c, k)
		o.queues = append(o.queues, k)
	}
	return o
}

// flush waits, at most limit in all, for every output to take what was
// queued for it; it reports whether they all did.
func (o logOutputs) flush(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	ok := true
	for _, q := range o.queues {
		ok = q.flush(deadline) && ok
	}
	return ok
}
