package benchmarks

import (
	"context"
	"flag"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// manyKeys is the number of clients of the many-keys workloads.
const manyKeys = 100_000

// memoryWorkload is one way of calling an in-process limiter.
type memoryWorkload struct {
	name     string
	keys     int  // distinct keys
	parallel bool // from GOMAXPROCS goroutines, or from one
	// ordered visits the keys in order, each goroutine from its own
	// offset; otherwise in the scattered order of spread.
	ordered bool
	// fresh builds the limiter just before the timer, so that every key is
	// created inside the timed run; otherwise every key exists before it.
	fresh bool
}

var memoryWorkloads = []memoryWorkload{
	// One client over its limit: after the first 100, decisions are denials
	// but for the 100 a second the policy refills.
	{name: "hotkey", keys: 1},
	{name: "hotkey-parallel", keys: 1, parallel: true},
	// Many clients within their limits: every decision admits.
	{name: "keys-100k-scattered", keys: manyKeys, parallel: true},
	{name: "keys-100k-ordered", keys: manyKeys, parallel: true, ordered: true},
	// The same clients, none known when the timer starts.
	{name: "new-keys-100k-scattered", keys: manyKeys, parallel: true, fresh: true},
	{name: "new-keys-100k-ordered", keys: manyKeys, parallel: true, fresh: true, ordered: true},
}

// BenchmarkMemory times one decision of each in-process limiter, in six
// workloads: one hot key from one goroutine and from GOMAXPROCS, and
// 100,000 keys from GOMAXPROCS goroutines, visited in a scattered order
// (spread) or in order from each goroutine's own offset (the order a
// sync.Map of recently made entries favours), with every key made before
// the timer starts (keys-…: it times deciding, not creating keys) or none
// (new-keys-…: the limiter is built just before the timer, so the run makes
// every key it meets). At run.sh's 1,000,000 iterations a new-keys run
// meets each of its 100,000 keys for the first time once: one decision in
// ten is a first sight, whose cost (the key's entry made, the store's table
// grown to hold it) the other nine share. BenchmarkMemoryFirstSight times
// first sights alone. Decisions that fail are counted as errors/op.
func BenchmarkMemory(b *testing.B) {
	keys := ipKeys(manyKeys)
	for _, w := range memoryWorkloads {
		keys := keys[:w.keys]
		for _, c := range speedContenders() {
			b.Run("work="+w.name+"/lib="+c.lib, func(b *testing.B) {
				ctx := context.Background()
				var allow allowFunc
				if !w.fresh {
					allow = c.build(b, setup{})
					for _, k := range keys {
						if _, err := allow(ctx, k); err != nil {
							b.Fatal(err)
						}
					}
				}
				runtime.GC() // the setup's garbage is not collected on the timer
				if w.fresh {
					allow = c.build(b, setup{})
				}
				var errs atomic.Int64
				gcs, cpu := gcCycles(), cpuTime()
				b.ReportAllocs()
				b.ResetTimer()
				if w.parallel {
					var next atomic.Uint64
					procs := uint64(runtime.GOMAXPROCS(0))
					b.RunParallel(func(pb *testing.PB) {
						g := next.Add(1) - 1
						var i uint64
						if w.ordered {
							// The goroutines start evenly apart.
							i = g % procs * uint64(len(keys)) / procs
						} else {
							i = g << 32 // far apart in spread's walk
						}
						for pb.Next() {
							k := spread(i, len(keys))
							if w.ordered {
								k = int(i % uint64(len(keys)))
							}
							i++
							if _, err := allow(ctx, keys[k]); err != nil {
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
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(gcCycles()-gcs), "gcs")
				if n := errs.Load(); n > 0 {
					b.ReportMetric(float64(n)/float64(b.N), "errors/op")
				}
			})
		}
	}
}

// cpuTime returns the CPU time the process has used, user and system, in
// ns. BenchmarkMemory reports what its timed runs used as cpu-ns/op: on a
// machine shared with more runnable threads than cores, a run is off its
// cores for part of its wall time, which ns/op counts and cpu-ns/op does
// not. It counts every goroutine's work, the collector's and a peer's own
// goroutines' included.
func cpuTime() int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return u.Utime.Nano() + u.Stime.Nano()
}

// gcCycles returns the number of garbage collections the program has
// completed. BenchmarkMemory reports those its timed runs saw as gcs: a
// collection takes a core from a run on two, and one that lands in a run
// or not splits the rounds in two.
func gcCycles() uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.NumGC
}

// BenchmarkMemoryFirstSight times decisions that are all first sights: a
// limiter built just before the timer decides b.N keys, made before it,
// once each, from GOMAXPROCS goroutines that take runs of firstSightRun keys
// in turn: a service whose every client is new. Its figures include making
// each key's entry and growing the tables that hold them. Keys are IPv4
// addresses, so b.N is at most 1<<24; none of the bounded limiters
// (maxKeys) evicts at run.sh's 1,000,000.
func BenchmarkMemoryFirstSight(b *testing.B) {
	for _, c := range speedContenders() {
		b.Run("lib="+c.lib, func(b *testing.B) {
			procs := runtime.GOMAXPROCS(0)
			n := b.N + procs*firstSightRun // the runs the goroutines leave unfinished
			if n > 1<<24 {
				b.Skipf("%d keys: more than there are IPv4 keys in 10/8", n)
			}
			ctx := context.Background()
			keys := ipKeys(n)
			runtime.GC()
			allow := c.build(b, setup{})
			var errs atomic.Int64
			var taken atomic.Uint64
			gcs, cpu := gcCycles(), cpuTime()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var i, end uint64
				for pb.Next() {
					if i == end {
						end = taken.Add(firstSightRun)
						i = end - firstSightRun
					}
					if _, err := allow(ctx, keys[i]); err != nil {
						errs.Add(1)
					}
					i++
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(gcCycles()-gcs), "gcs")
			if n := errs.Load(); n > 0 {
				b.ReportMetric(float64(n)/float64(b.N), "errors/op")
			}
		})
	}
}

// firstSightRun is how many keys in a row a goroutine of
// BenchmarkMemoryFirstSight takes at once: enough that the counter they
// share costs nothing per decision.
const firstSightRun = 1024

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
