package boot

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Timeline records every boot step with its start and duration, for
// /run/seedinit/timeline.json and `seedinit analyze`.
type Timeline struct {
	mu    sync.Mutex
	Start time.Time `json:"start"`
	Steps []Step    `json:"steps"`
	log   *slog.Logger
}

// Step is one timed piece of the boot.
type Step struct {
	Name     string        `json:"name"`
	Start    time.Duration `json:"start_ns"` // since Timeline.Start
	Duration time.Duration `json:"duration_ns"`
	Error    string        `json:"error,omitempty"`
}

// NewTimeline starts a timeline at start (PID 1's own start time when
// known), logging each step's start and end to log.
func NewTimeline(start time.Time, log *slog.Logger) *Timeline {
	return &Timeline{Start: start, log: log}
}

// Do runs fn as a named step: it logs a line when it starts and one when it
// ends or fails, with its duration, and records it. A panic in fn becomes
// the step's error: a step never takes the boot down.
func (t *Timeline) Do(name string, fn func() error) (err error) {
	start := time.Now()
	t.log.Info("start", "step", name)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
		d := time.Since(start)
		s := Step{Name: name, Start: start.Sub(t.Start), Duration: d}
		if err != nil {
			s.Error = err.Error()
			t.log.Error("failed", "step", name, "duration", d.Round(time.Microsecond), "error", err.Error())
		} else {
			t.log.Info("done", "step", name, "duration", d.Round(time.Microsecond))
		}
		t.mu.Lock()
		t.Steps = append(t.Steps, s)
		t.mu.Unlock()
	}()
	return fn()
}

// ModuleStepPrefix names the steps of single kernel modules' loads.
const ModuleStepPrefix = "module: "

// Record adds a step timed elsewhere (a kernel module's load, inside the
// "kernel modules" step), without logging it.
func (t *Timeline) Record(name string, start time.Time, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.Steps = append(t.Steps, Step{Name: name, Start: start.Sub(t.Start), Duration: d})
}

// JSON is the timeline as written to timeline.json.
func (t *Timeline) JSON() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, _ := json.MarshalIndent(t, "", " ")
	return append(b, '\n')
}

// ReadTimeline parses timeline.json.
func ReadTimeline(b []byte) (*Timeline, error) {
	var t Timeline
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("parse timeline: %w", err)
	}
	return &t, nil
}

// Blame prints steps slowest first, like `cloud-init analyze blame`.
func (t *Timeline) Blame(w io.Writer) {
	steps := append([]Step(nil), t.Steps...)
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].Duration > steps[j].Duration })
	for _, s := range steps {
		fmt.Fprintf(w, "%10.5fs (%s)%s\n", s.Duration.Seconds(), s.Name, failed(s))
	}
}

// Show prints steps in order with their offsets, like `cloud-init analyze
// show`.
func (t *Timeline) Show(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tTOOK\tSTEP")
	var end time.Duration
	for _, s := range t.Steps {
		if strings.HasPrefix(s.Name, ModuleStepPrefix) {
			continue // inside "kernel modules"; blame lists them
		}
		fmt.Fprintf(tw, "%.3fs\t%.3fs\t%s%s\n", s.Start.Seconds(), s.Duration.Seconds(), s.Name, failed(s))
		if e := s.Start + s.Duration; e > end {
			end = e
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "total %.3fs from seedinit's start\n", end.Seconds())
}

func failed(s Step) string {
	if s.Error != "" {
		return " FAILED: " + s.Error
	}
	return ""
}
