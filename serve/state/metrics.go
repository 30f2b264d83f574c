package state

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// latencyBuckets are the histogram's upper bounds in seconds: a seed is
// served in milliseconds; the top buckets catch a store that stalls.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// maxReasons bounds the refusal reasons counted apart; the rest are
// "other", so that a client cannot grow the metrics without end.
const maxReasons = 64

type metrics struct {
	mu        sync.Mutex
	requests  map[requestKey]uint64
	latency   map[string]*histogram
	refusals  map[string]uint64
	storeErrs uint64
}

type requestKey struct {
	layout string
	code   int
}

type histogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

func newMetrics() metrics {
	return metrics{requests: map[requestKey]uint64{}, latency: map[string]*histogram{}, refusals: map[string]uint64{}}
}

func (m *metrics) request(layout string, code int, elapsed time.Duration) {
	s := elapsed.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[requestKey{layout, code}]++
	h := m.latency[layout]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(latencyBuckets)+1)}
		m.latency[layout] = h
	}
	i := sort.SearchFloat64s(latencyBuckets, s)
	h.counts[i]++
	h.sum += s
	h.n++
}

func (m *metrics) refused(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.refusals[reason]; !ok && len(m.refusals) >= maxReasons {
		reason = "other"
	}
	m.refusals[reason]++
}

func (m *metrics) storeError() {
	m.mu.Lock()
	m.storeErrs++
	m.mu.Unlock()
}

// labelValue escapes a label value as the text exposition format wants.
func labelValue(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// writeMetrics writes the Prometheus text exposition (version 0.0.4).
func (t *Tracker) writeMetrics(ctx context.Context, w io.Writer) error {
	entries, err := t.Entries(ctx)
	byState := map[State]int{}
	for _, s := range States {
		byState[s] = 0
	}
	for _, e := range entries {
		byState[e.State]++
	}

	m := &t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintln(w, "# HELP seedinit_serve_requests_total Requests answered, by layout and HTTP status code.")
	fmt.Fprintln(w, "# TYPE seedinit_serve_requests_total counter")
	keys := make([]requestKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].layout != keys[j].layout {
			return keys[i].layout < keys[j].layout
		}
		return keys[i].code < keys[j].code
	})
	for _, k := range keys {
		fmt.Fprintf(w, "seedinit_serve_requests_total{layout=%s,code=\"%d\"} %d\n", labelValue(k.layout), k.code, m.requests[k])
	}

	fmt.Fprintln(w, "# HELP seedinit_serve_request_duration_seconds Time to answer a request, by layout.")
	fmt.Fprintln(w, "# TYPE seedinit_serve_request_duration_seconds histogram")
	layouts := make([]string, 0, len(m.latency))
	for l := range m.latency {
		layouts = append(layouts, l)
	}
	sort.Strings(layouts)
	for _, l := range layouts {
		h := m.latency[l]
		var cum uint64
		for i, le := range latencyBuckets {
			cum += h.counts[i]
			fmt.Fprintf(w, "seedinit_serve_request_duration_seconds_bucket{layout=%s,le=\"%s\"} %d\n", labelValue(l), formatFloat(le), cum)
		}
		fmt.Fprintf(w, "seedinit_serve_request_duration_seconds_bucket{layout=%s,le=\"+Inf\"} %d\n", labelValue(l), h.n)
		fmt.Fprintf(w, "seedinit_serve_request_duration_seconds_sum{layout=%s} %s\n", labelValue(l), formatFloat(h.sum))
		fmt.Fprintf(w, "seedinit_serve_request_duration_seconds_count{layout=%s} %d\n", labelValue(l), h.n)
	}

	fmt.Fprintln(w, "# HELP seedinit_serve_instances Instances of the inventory by provisioning state.")
	fmt.Fprintln(w, "# TYPE seedinit_serve_instances gauge")
	for _, s := range States {
		fmt.Fprintf(w, "seedinit_serve_instances{state=%s} %d\n", labelValue(string(s)), byState[s])
	}

	fmt.Fprintln(w, "# HELP seedinit_serve_refusals_total Requests refused, by reason.")
	fmt.Fprintln(w, "# TYPE seedinit_serve_refusals_total counter")
	reasons := make([]string, 0, len(m.refusals))
	for r := range m.refusals {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "seedinit_serve_refusals_total{reason=%s} %d\n", labelValue(r), m.refusals[r])
	}

	fmt.Fprintln(w, "# HELP seedinit_serve_state_errors_total Updates the state store failed to make.")
	fmt.Fprintln(w, "# TYPE seedinit_serve_state_errors_total counter")
	fmt.Fprintf(w, "seedinit_serve_state_errors_total %d\n", m.storeErrs)
	return err
}

func (t *Tracker) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if err := t.writeMetrics(ctx, w); err != nil {
		// The counters are written; the gauge by state is what failed.
		t.cfg.Log.Error("metrics: list the state", "err", err)
	}
}
