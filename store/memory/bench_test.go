package memory_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// The benchmarks compare the algorithms on the store (other libraries are
// compared in the benchmarks module, so that none enters this module's
// dependencies). Run them in interleaved rounds, so that a noisy neighbour
// slows every algorithm alike, and compare within the run:
//
//	for i in 1 2 3 4 5 6 7 8; do
//		go test ./store/memory -run '^$' -bench 'HotKey|ManyKeys' -benchmem -count 1
//	done > bench.txt
//	benchstat bench.txt
//
// Every policy admits 100/s with a burst of 100, like the reference, and the
// workloads mostly hit the allow path.

const benchKeys = 100_000

func benchPolicy(alg core.Algorithm) *core.Policy {
	c := core.PolicyConfig{Name: alg.String(), Algorithm: alg, Quota: 100, Period: time.Second}
	if alg == core.TokenBucket || alg == core.GCRA || alg == core.LeakyBucket || alg == core.LeakyQueue {
		c.Burst = 100
	}
	if alg == core.LeakyQueue {
		c.MaxDelay = time.Second // and 100 more waiting their turns
	}
	if alg == core.SlidingLog {
		c.Quota, c.Period = 100, time.Second
	}
	return core.MustPolicy(c)
}

var benchAlgorithms = []core.Algorithm{core.TokenBucket, core.GCRA, core.LeakyBucket, core.FixedWindow, core.SlidingLog, core.SlidingCounter, core.LeakyQueue}

// ipKeys returns n IPv4-address-like keys.
func ipKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("10.%d.%d.%d", i>>16&0xff, i>>8&0xff, i&0xff)
	}
	return keys
}

func newBenchStore(b *testing.B) *memory.Store {
	s, err := memory.New(memory.WithMaxKeys(4*benchKeys), memory.WithSweepInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func BenchmarkHotKey(b *testing.B) {
	ctx := context.Background()
	for _, alg := range benchAlgorithms {
		b.Run(alg.String(), func(b *testing.B) {
			s := newBenchStore(b)
			req := core.Request{Key: "10.0.0.1", Policy: benchPolicy(alg), Cost: 1}
			for b.Loop() {
				_, _ = s.Take(ctx, req)
			}
		})
	}
}

func BenchmarkHotKeyParallel(b *testing.B) {
	ctx := context.Background()
	for _, alg := range benchAlgorithms {
		b.Run(alg.String(), func(b *testing.B) {
			s := newBenchStore(b)
			req := core.Request{Key: "10.0.0.1", Policy: benchPolicy(alg), Cost: 1}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = s.Take(ctx, req)
				}
			})
		})
	}
}

// BenchmarkManyKeysParallel spreads requests over 100k keys, all present
// before the timer starts, so it measures taking from existing keys. Each
// goroutine visits the keys in a scattered order (scatter), as the
// benchmarks module does. Visited in the order they were made, the
// reference's limiters, allocated in that order, were read one after the
// next from memory the prefetcher had streamed in, a locality the store's
// slots, placed by hash, cannot have: a quiet machine rewarded it and a
// busy one did not, so the rounds of one run disagreed (issue #13). No
// server's clients arrive in the order their state was made.
func BenchmarkManyKeysParallel(b *testing.B) {
	ctx := context.Background()
	keys := ipKeys(benchKeys)
	for _, alg := range benchAlgorithms {
		b.Run(alg.String(), func(b *testing.B) {
			s := newBenchStore(b)
			p := benchPolicy(alg)
			for _, k := range keys {
				_, _ = s.Take(ctx, core.Request{Key: k, Policy: p, Cost: 1})
			}
			var next atomic.Uint64
			settle()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := next.Add(7919) * 7919
				for pb.Next() {
					i++
					_, _ = s.Take(ctx, core.Request{Key: keys[scatter(i)], Policy: p, Cost: 1})
				}
			})
		})
	}
}

// scatter returns the i-th index of a walk that visits each of benchKeys
// keys once every benchKeys steps, in an order unrelated to the order they
// were made (7919 is prime and does not divide benchKeys).
func scatter(i uint64) int { return int(i * 7919 % benchKeys) }

// settle collects the garbage of a benchmark's setup, so that no collection
// started by it runs into the timed loop, taking a core from it.
func settle() { runtime.GC() }

// BenchmarkHeapPerKey reports the heap held per idle key at 1M keys, key
// bytes included, as the metric bytes/key. Each iteration fills a fresh store.
func BenchmarkHeapPerKey(b *testing.B) {
	const n = 1_000_000
	keys := ipKeys(n)
	measure := func(b *testing.B, fill func() any) {
		var perKey float64
		for b.Loop() {
			before := heapInUse()
			held := fill()
			after := heapInUse()
			runtime.KeepAlive(held)
			perKey = float64(after-before) / n
		}
		b.ReportMetric(perKey, "bytes/key")
	}
	for _, alg := range benchAlgorithms {
		b.Run(alg.String(), func(b *testing.B) {
			p := benchPolicy(alg)
			measure(b, func() any {
				s, err := memory.New(memory.WithMaxKeys(4*n), memory.WithSweepInterval(0))
				if err != nil {
					b.Fatal(err)
				}
				for _, k := range keys {
					_, _ = s.Take(context.Background(), core.Request{Key: k, Policy: p, Cost: 1})
				}
				return s
			})
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
