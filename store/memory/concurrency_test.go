package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// Takes without the shard lock race with everything that holds it: keys
// arriving and growing their tables, layered requests, sweeps, and fights
// over hot keys. With the clock stopped nothing refills and nothing is
// evicted, so every key must admit exactly its burst, and the layer shared by
// every layered request exactly the number of them admitted: one lost update
// anywhere would show as one admission too many.
func TestConcurrentTakesLoseNoUpdate(t *testing.T) {
	for _, alg := range []core.Algorithm{core.TokenBucket, core.GCRA} {
		t.Run(alg.String(), func(t *testing.T) {
			const (
				keys, hotKeys, burst = 20_000, 4, 5
				goroutines, rounds   = 8, 3
			)
			s, _ := newStore(t, memory.WithMaxKeys(1<<20))
			p := core.MustPolicy(core.PolicyConfig{Name: "p", Algorithm: alg, Quota: 1, Period: time.Hour, Burst: burst})
			shared := core.MustPolicy(core.PolicyConfig{Name: "shared", Algorithm: core.FixedWindow, Quota: 1 << 30, Period: time.Hour})

			admitted := make([]atomic.Int64, keys+hotKeys)
			var layered atomic.Int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			go func() { // sweeps find nothing full, but lock every entry
				for {
					select {
					case <-stop:
						return
					default:
						s.Sweep()
					}
				}
			}()
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx := context.Background()
					rng := rand.New(rand.NewPCG(uint64(g), 1))
					ds := make([]core.Decision, 2)
					for range rounds {
						for _, i := range rng.Perm(keys) {
							if i%3 == 0 { // every request on a hot key too
								h := keys + i%hotKeys
								if d, err := s.Take(ctx, core.Request{Key: fmt.Sprint("hot", h), Policy: p, Cost: 1}); err == nil && d.Allowed {
									admitted[h].Add(1)
								}
							}
							key := fmt.Sprint("key", i)
							if g%2 == 0 {
								d, err := s.Take(ctx, core.Request{Key: key, Policy: p, Cost: 1})
								if err == nil && d.Allowed {
									admitted[i].Add(1)
								}
								continue
							}
							rs := []core.Request{{Key: key, Policy: p, Cost: 1}, {Key: "everyone", Policy: shared, Cost: 1}}
							if err := s.TakeAll(ctx, rs, ds); err == nil && ds[0].Allowed && ds[1].Allowed {
								admitted[i].Add(1)
								layered.Add(1)
							}
						}
					}
				}()
			}
			wg.Wait()
			close(stop)

			for i := range admitted {
				require.Equal(t, int64(burst), admitted[i].Load(), "key %d", i)
			}
			d, err := s.Take(context.Background(), core.Request{Key: "everyone", Policy: shared, Cost: 1})
			require.NoError(t, err)
			assert.Equal(t, int64(1<<30)-layered.Load()-1, d.Remaining, "the shared layer lost or gained units")
			assert.Equal(t, keys+hotKeys+1, s.Len())
		})
	}
}

// The same race on a store so small that its generations rotate all the
// time: it must stay within its cap and free of data races.
func TestConcurrentRotationStaysBounded(t *testing.T) {
	const capKeys = 512 // the smallest cap WithMaxKeys accepts
	s, clock := newStore(t, memory.WithMaxKeys(capKeys))
	p := core.MustPolicy(core.PolicyConfig{Name: "p", Algorithm: core.GCRA, Quota: 10, Period: time.Second, Burst: 10})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			ds := make([]core.Decision, 2)
			for i := range 20_000 {
				key := fmt.Sprint(i % (capKeys * 4))
				switch i % 4 {
				case 0:
					rs := []core.Request{{Key: key, Policy: p, Cost: 1}, {Key: fmt.Sprint(g), Policy: p, Cost: 1}}
					assert.NoError(t, s.TakeAll(ctx, rs, ds))
				case 1:
					_, err := s.Adjust(ctx, core.Request{Key: key, Policy: p, Cost: -1})
					assert.NoError(t, err)
				default:
					_, err := s.Take(ctx, core.Request{Key: key, Policy: p, Cost: 1})
					assert.NoError(t, err)
				}
				if i%1000 == 0 {
					clock.Advance(100 * time.Millisecond)
					s.Sweep()
					assert.LessOrEqual(t, s.Len(), capKeys)
				}
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, s.Len(), capKeys)
}
