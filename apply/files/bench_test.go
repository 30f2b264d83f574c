package files

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"testing"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
)

// The benchmarks write into the test's temporary directory: compare runs
// on the same machine only. Each iteration applies the config to a fresh
// root, made outside the timer.

func benchWriteFiles(b *testing.B, items []any) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		env := applytest.NewEnv(b, apply.Config{"write_files": items})
		env.Log = slog.New(slog.DiscardHandler)
		b.StartTimer()
		if err := runWriteFiles(context.Background(), env.Env); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteFilesEntries: the cost per entry must not grow with the
// number of entries.
func BenchmarkWriteFilesEntries(b *testing.B) {
	for _, n := range []int{100, 300, 1000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			items := make([]any, n)
			for i := range items {
				items[i] = map[string]any{"path": fmt.Sprintf("/srv/wf/f%d", i), "content": fmt.Sprintf("hello %d", i)}
			}
			benchWriteFiles(b, items)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
		})
	}
}

// BenchmarkWriteFilesGzipBomb is one gz+b64 entry that decompresses to
// size bytes: B/op shows whether the content is held in memory or
// streamed to the file.
func BenchmarkWriteFilesGzipBomb(b *testing.B) {
	for _, size := range []int{1 << 20, 16 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("MiB=%d", size>>20), func(b *testing.B) {
			var z bytes.Buffer
			w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
			w.Write(make([]byte, size))
			w.Close()
			items := []any{map[string]any{"path": "/srv/bomb", "encoding": "gz+b64", "content": base64.StdEncoding.EncodeToString(z.Bytes())}}
			benchWriteFiles(b, items)
		})
	}
}
