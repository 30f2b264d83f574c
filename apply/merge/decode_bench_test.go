package merge

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedinit/seedinit/seed"
)

// peakHeap samples the bytes of live heap objects every millisecond while
// it runs, to report the peak a decoding reached above where it started.
type peakHeap struct {
	base, peak atomic.Uint64
	stop, done chan struct{}
}

func startPeakHeap() *peakHeap {
	runtime.GC()
	p := &peakHeap{stop: make(chan struct{}), done: make(chan struct{})}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	p.base.Store(s[0].Value.Uint64())
	go func() {
		defer close(p.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > p.peak.Load() {
				p.peak.Store(v)
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// report stops sampling and reports the peak in MiB.
func (p *peakHeap) report(b *testing.B) {
	close(p.stop)
	<-p.done
	peak := float64(0)
	if p.peak.Load() > p.base.Load() {
		peak = float64(p.peak.Load()-p.base.Load()) / (1 << 20)
	}
	b.ReportMetric(peak, "peak-heap-MiB")
}

// hostileUserData is user-data of the shapes that took a PID 1's memory:
// a mapping of n keys, a list of n items, a jinja list doubled n times.
func hostileUserData(shape string, n int) []byte {
	var b bytes.Buffer
	switch shape {
	case "map-keys":
		b.WriteString("#cloud-config\n")
		for i := range n {
			fmt.Fprintf(&b, "k%07d: v\n", i)
		}
	case "list-items":
		b.WriteString("#cloud-config\njunk:\n")
		for range n {
			b.WriteString("- x\n")
		}
	case "jinja-doubling":
		b.WriteString("## template: jinja\n#cloud-config\n{% set l = [1] %}\n")
		b.WriteString(strings.Repeat("{% set l = l + l %}\n", n))
		b.WriteString("n: {{ l|length }}\n")
	}
	return b.Bytes()
}

// BenchmarkDecodeUserData decodes and merges user-data as a boot does
// (seed.ProcessUserData, then MergeParts) for each hostile shape at
// growing sizes, reporting time, bytes allocated and the peak of live
// heap. Past the limits the work stops at the limit: the figures stop
// growing with the input.
func BenchmarkDecodeUserData(b *testing.B) {
	vars := map[string]any{"v1": map[string]any{"local_hostname": "h"}}
	for _, c := range []struct {
		shape string
		sizes []int
		name  func(int) string
	}{
		{"map-keys", []int{10_000, 99_990, 500_000}, kilo},
		{"list-items", []int{10_000, 99_990, 1_000_000}, kilo},
		{"jinja-doubling", []int{10, 20, 40}, func(n int) string { return fmt.Sprint(n) }},
	} {
		for _, n := range c.sizes {
			raw := hostileUserData(c.shape, n)
			b.Run(c.shape+"-"+c.name(n), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(raw)))
				p := startPeakHeap()
				for b.Loop() {
					proc, err := seed.ProcessUserData(context.Background(), raw, seed.Options{TemplateVars: vars})
					if err != nil {
						b.Fatal(err)
					}
					MergeParts(proc.Parts)
				}
				p.report(b)
			})
		}
	}
}

func kilo(n int) string {
	if n >= 1_000_000 {
		return fmt.Sprintf("%dm", n/1_000_000)
	}
	return fmt.Sprintf("%dk", n/1000)
}
