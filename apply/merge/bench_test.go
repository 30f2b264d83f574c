package merge

import (
	"fmt"
	"testing"

	"github.com/seedinit/seedinit/seed"
)

// manyParts is user-data cut into n cloud-config parts, each adding a key
// of its own and appending to runcmd, the shape of a tool that writes one
// part per setting.
func manyParts(n int) []seed.Part {
	parts := make([]seed.Part, n)
	for i := range parts {
		parts[i] = seed.Part{
			Kind:     seed.KindCloudConfig,
			Filename: fmt.Sprintf("part-%03d", i+1),
			Content:  fmt.Appendf(nil, "#cloud-config\nmerge_how: dict(recurse_array)+list(append)\nk%d: v\nruncmd: [\"echo %d\"]\n", i, i),
		}
	}
	return parts
}

// BenchmarkMergeParts shows how merging grows with the number of parts:
// linear, each part costing what it holds, not what came before it.
func BenchmarkMergeParts(b *testing.B) {
	for _, n := range []int{5_000, 10_000, 20_000} {
		parts := manyParts(n)
		b.Run(fmt.Sprintf("parts-%dk", n/1000), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cfg, errs := MergeParts(parts)
				if len(errs) > 0 || len(cfg) != n+1 {
					b.Fatalf("MergeParts: %d keys, %v", len(cfg), errs)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/part")
		})
	}
}
