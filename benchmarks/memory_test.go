package benchmarks

import (
	"context"
	"flag"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// manyKeys is the number of clients of the many-keys workloads.
const manyKeys = 100_000

// memoryWorkload is one way of calling an in-process limiter.
type memoryWorkload struct {
	name     string
	keys     int  // distinct keys, visited in turn
	parallel bool // from GOMAXPROCS goroutines, or from one
}

var memoryWorkloads = []memoryWorkload{
	// One client over its limit: after the first 100, decisions are denials
	// but for the 100 a second the policy refills.
	{"hotkey", 1, false},
	{"hotkey-parallel", 1, true},
	// Many clients within their limits: every decision admits.
	{"keys-100k-parallel", manyKeys, true},
}

// BenchmarkMemory times one decision of each in-process limiter. Every key
// exists before the timer starts, so it times deciding, not creating keys.
// Decisions that fail are counted as errors/op.
func BenchmarkMemory(b *testing.B) {
	keys := ipKeys(manyKeys)
	for _, w := range memoryWorkloads {
		keys := keys[:w.keys]
		for _, c := range speedContenders() {
			b.Run("work="+w.name+"/lib="+c.lib, func(b *testing.B) {
				allow := c.build(b, setup{})
				ctx := context.Background()
				for _, k := range keys {
					if _, err := allow(ctx, k); err != nil {
						b.Fatal(err)
					}
				}
				var errs atomic.Int64
				runtime.GC() // the setup's garbage is not collected on the timer
				b.ReportAllocs()
				b.ResetTimer()
				if w.parallel {
					var next atomic.Uint64
					b.RunParallel(func(pb *testing.PB) {
						i := next.Add(1) << 32 // goroutines start far apart
						for pb.Next() {
							i++
							if _, err := allow(ctx, keys[spread(i, len(keys))]); err != nil {
								errs.Add(1)
							}
						}
					})
				} else {
					var i uint64
					for b.Loop() {
						i++
						if _, err := allow(ctx, keys[spread(i, len(keys))]); err != nil {
							errs.Add(1)
						}
					}
				}
				b.StopTimer()
				if n := errs.Load(); n > 0 {
					b.ReportMetric(float64(n)/float64(b.N), "errors/op")
				}
			})
		}
	}
}

// heapKeys is the number of keys BenchmarkHeapPerKey fills a limiter with:
// a million, fewer for a smoke run (run.sh -quick).
var heapKeys = flag.Int("heapkeys", 1_000_000, "keys BenchmarkHeapPerKey fills each limiter with")

// BenchmarkHeapPerKey reports the heap each limiter holds per key once a
// million keys (-heapkeys) have each taken one unit, as B/key: the live heap after a
// garbage collection, less the live heap before the limiter was built,
// over the number of keys. Every key is a fresh string, as a server's
// would be, so a limiter that keeps its keys pays for their bytes. The
// limiters keep every key (setup.keepKeys), since a fill takes seconds
// and some would otherwise drop keys a second after their request: it
// weighs a million clients all active at once.
func BenchmarkHeapPerKey(b *testing.B) {
	n := *heapKeys
	keys := ipKeys(n)
	for _, c := range limiterContenders() {
		b.Run("lib="+c.lib, func(b *testing.B) {
			ctx := context.Background()
			var perKey float64
			for b.Loop() {
				before := liveHeap()
				allow := c.build(b, setup{keepKeys: true})
				for _, k := range keys {
					if _, err := allow(ctx, strings.Clone(k)); err != nil {
						b.Fatal(err)
					}
				}
				after := liveHeap()
				runtime.KeepAlive(allow)
				perKey = (float64(after) - float64(before)) / float64(n)
			}
			b.ReportMetric(perKey, "B/key")
			b.ReportMetric(float64(n), "keys")
		})
	}
}

// liveHeap returns the bytes of heap objects left after a full collection.
// The second collection frees what the first one's finalizers released.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
