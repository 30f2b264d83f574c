package rootfs

import (
	"fmt"
	"strings"
	"testing"
)

// The benchmarks write into the test's temporary directory, so their
// figures are those of that directory's filesystem and disk: compare runs
// made on the same machine only.

func BenchmarkWriteFile(b *testing.B) {
	data := make([]byte, 1024)
	b.Run("new", func(b *testing.B) {
		r, _ := newRoot(b)
		i := 0
		for b.Loop() {
			if err := r.WriteFile(fmt.Sprintf("/etc/f%d", i), data, 0o644, KeepOwner); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("replace", func(b *testing.B) {
		r, _ := newRoot(b)
		for b.Loop() {
			if err := r.WriteFile("/etc/f", data, 0o644, KeepOwner); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkModuleWrites is what a module that writes does, as the stages
// runner sees it: a batch of small files, then the Sync before the
// module's semaphore.
func BenchmarkModuleWrites(b *testing.B) {
	data := make([]byte, 512)
	r, _ := newRoot(b)
	for b.Loop() {
		for j := range 20 {
			if err := r.WriteFile(fmt.Sprintf("/etc/m/f%d", j), data, 0o600, KeepOwner); err != nil {
				b.Fatal(err)
			}
		}
		if err := r.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeepWrite writes one file below a fresh chain of depth
// directories, the shape of a hostile write_files path: the cost per
// level must stay flat as the depth grows (linear path handling). Each
// iteration starts its own chain, so every level is created.
func BenchmarkDeepWrite(b *testing.B) {
	for _, depth := range []int{250, 500, 1000, 2000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			r, _ := newRoot(b)
			chain := strings.Repeat("a/", depth-1)
			i := 0
			for b.Loop() {
				if err := r.WriteFile(fmt.Sprintf("/%d/%sf", i, chain), nil, 0o644, KeepOwner); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(depth), "ns/level")
		})
	}
}
