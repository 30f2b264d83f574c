package pgstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedinit/seedinit/serve/pgstore/pgtest"
	"github.com/seedinit/seedinit/serve/state"
)

// BenchmarkFetched is the cost of recording one part served, the write
// every request of a boot makes, over a Unix socket to a local cluster:
// from parallel goroutines spread over 1,000 instances, as a lab's boots
// are.
func BenchmarkFetched(b *testing.B) {
	db := open(b, pgtest.Start(b))
	ctx := context.Background()
	var n atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if err := db.Fetched(ctx, fmt.Sprintf("waf-%04d", i%1000), state.Fetch{Layout: "ec2", Part: "user-data", At: time.Now()}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
