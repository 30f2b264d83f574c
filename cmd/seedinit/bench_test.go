package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkQueryListKeys lists the top-level keys of an instance-data.json
// with keys keys: the cost per key must stay flat as the file grows.
// 1,000,000 keys are past query's limit: the "refused" metric says
// whether the listing was refused (1) or made (0).
func BenchmarkQueryListKeys(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 250_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			root := b.TempDir()
			data := map[string]any{"v1": map[string]any{"instance_id": "i-1"}}
			for i := range n {
				data[fmt.Sprintf("k%d", i)] = i
			}
			writeInstanceData(b, root, data)
			b.ReportAllocs()
			b.ResetTimer()
			refused := 0.0
			for b.Loop() {
				code := dispatch([]string{"query", "--root", root, "--list-keys"}, io.Discard, io.Discard)
				switch {
				case code != exitOK && n > 300_000:
					refused = 1
				case code != exitOK:
					b.Fatalf("query exit %d", code)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
			b.ReportMetric(refused, "refused")
		})
	}
}

func writeInstanceData(b *testing.B, root string, data map[string]any) {
	b.Helper()
	p := filepath.Join(root, "run/cloud-init/instance-data.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	buf, err := json.Marshal(data)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSchemaLargeScalar validates a cloud-config of size bytes, all
// of it one scalar; 50 MiB is past schema's limit of 16 MiB.
func BenchmarkSchemaLargeScalar(b *testing.B) {
	for _, size := range []int{1 << 20, 4 << 20, 16 << 20, 50 << 20} {
		b.Run(fmt.Sprintf("MiB=%d", size>>20), func(b *testing.B) {
			p := filepath.Join(b.TempDir(), "user-data")
			const head = "#cloud-config\nfinal_message: "
			doc := head + strings.Repeat("x", size-len(head)-1) + "\n"
			if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				dispatch([]string{"schema", "--config-file", p}, io.Discard, io.Discard)
			}
		})
	}
}
