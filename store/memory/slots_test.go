package memory

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

// Tables rebuilt over and over under takes on their keys, some alone, some
// layered, lose no update: a copy or a layered take that raced a take without
// the entry's lock would let the key admit more than its burst.
func TestRebuildRacesTheHotPath(t *testing.T) {
	for _, alg := range []core.Algorithm{core.TokenBucket, core.GCRA} {
		t.Run(alg.String(), func(t *testing.T) {
			const keys, burst = 8, 3000
			s, _ := newTestStore(t)
			p := core.MustPolicy(core.PolicyConfig{Name: "p", Algorithm: alg, Quota: 1, Period: time.Hour, Burst: burst})
			ctx := context.Background()
			for k := range keys {
				_, err := s.Take(ctx, core.Request{Key: fmt.Sprint(k), Policy: p, Cost: 1})
				require.NoError(t, err)
			}

			stop := make(chan struct{})
			rebuilt := make(chan int)
			go func() {
				n := 0
				defer func() { rebuilt <- n }()
				for {
					select {
					case <-stop:
						return
					default:
					}
					for k := range keys {
						i := shardIndex(s.hash(fmt.Sprint(k)))
						s.shards[i].mu.Lock()
						st := &s.findTable(p).shards[i]
						st.rebuild(st.young.Load())
						s.shards[i].mu.Unlock()
						n++
					}
				}
			}()
			var admitted [keys]atomic.Int64
			var wg sync.WaitGroup
			wide := core.MustPolicy(core.PolicyConfig{Name: "wide", Algorithm: core.FixedWindow, Quota: 1 << 30, Period: time.Hour})
			for g := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ds := make([]core.Decision, 2)
					for k := range keys {
						r := core.Request{Key: fmt.Sprint(k), Policy: p, Cost: 1}
						for {
							if g == 0 {
								err := s.TakeAll(ctx, []core.Request{r, {Key: "layer", Policy: wide, Cost: 1}}, ds)
								if err != nil || !ds[0].Allowed {
									break
								}
							} else if d, err := s.Take(ctx, r); err != nil || !d.Allowed {
								break
							}
							admitted[k].Add(1)
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			require.Positive(t, <-rebuilt)
			for k := range keys {
				require.Equal(t, int64(burst-1), admitted[k].Load(), "key %d", k)
			}
		})
	}
}

// A sweep that read the time under the shard lock must not drop a take that
// ran on the hot path after that read, even with a clock set back, which made
// the earlier reading later than the take.
func TestSweepKeepsATakeItRaced(t *testing.T) {
	for _, alg := range []core.Algorithm{core.TokenBucket, core.GCRA} {
		t.Run(alg.String(), func(t *testing.T) {
			s, clock := newTestStore(t)
			p := core.MustPolicy(core.PolicyConfig{Name: "p", Algorithm: alg, Quota: 1, Period: time.Hour, Burst: 5})
			ctx := context.Background()
			r := core.Request{Key: "k", Policy: p, Cost: 1}
			_, err := s.Take(ctx, r)
			require.NoError(t, err)
			clock.Advance(10 * time.Hour) // full again, still held

			i := shardIndex(s.hash("k"))
			s.shards[i].mu.Lock() // what Sweep does first
			now := s.now()
			clock.Advance(-10 * time.Hour)
			d, err := s.Take(ctx, r) // the hot path: no wait for the shard lock
			require.NoError(t, err)
			require.Equal(t, int64(3), d.Remaining)
			for table := s.tables.Load(); table != nil; table = table.next {
				table.shards[i].sweep(table.policy, now, s.now)
			}
			s.shards[i].mu.Unlock()

			d, err = s.Take(ctx, r)
			require.NoError(t, err)
			require.Equal(t, int64(2), d.Remaining, "the sweep dropped a take it raced")
		})
	}
}

// A request for a contended key waits for the shard lock, and for the entry
// while a hot path that got it before the mark still holds it; the sweep
// clears the mark and the key goes back to the hot path.
func TestContendedKeyWaitsForShardAndEntry(t *testing.T) {
	s, _ := newTestStore(t)
	p := core.MustPolicy(core.PolicyConfig{Name: "p", Algorithm: core.GCRA, Quota: 1, Period: time.Hour, Burst: 100})
	ctx := context.Background()
	r := core.Request{Key: "k", Policy: p, Cost: 1}
	_, err := s.Take(ctx, r)
	require.NoError(t, err)
	h := s.hash("k")
	sh := s.shardOf(h)
	y := s.findTable(p).shards[shardIndex(h)].young.Load()
	j, _, state := y.acquire(h, false) // a hot path holds it...
	require.GreaterOrEqual(t, j, 0)
	word := &y.words[j]
	atomic.OrUint64(word, contended) // ...when another marks it

	taken := takeAsync(t, s, r)
	requireWaiting(t, taken, "took from a slot a hot path holds")
	storekit.Take(p, &state, s.now(), 1) // the holder's take
	y.release(j, state)
	require.Equal(t, int64(97), (<-taken).Remaining, "the waiter saw the holder's take")
	require.Equal(t, tagOf(h)|contended, atomic.LoadUint64(word), "still marked, and unlocked")

	sh.mu.Lock()
	taken = takeAsync(t, s, r)
	requireWaiting(t, taken, "took from a contended entry without the shard lock")
	sh.mu.Unlock()
	require.Equal(t, int64(96), (<-taken).Remaining)

	s.Sweep()
	assert.Equal(t, tagOf(h), atomic.LoadUint64(word), "the sweep cleared the mark")
	sh.mu.Lock() // the hot path no longer needs it
	taken = takeAsync(t, s, r)
	select {
	case d := <-taken:
		assert.Equal(t, int64(95), d.Remaining)
	case <-time.After(5 * time.Second):
		t.Fatal("the hot path waited for the shard lock after the sweep")
	}
	sh.mu.Unlock()
	assert.Equal(t, tagOf(h), atomic.LoadUint64(word), "the hot path left the slot unlocked")
}

// takeAsync runs s.Take(r) in a goroutine and delivers its decision.
func takeAsync(t *testing.T, s *Store, r core.Request) <-chan core.Decision {
	taken := make(chan core.Decision, 1)
	go func() {
		d, err := s.Take(context.Background(), r)
		assert.NoError(t, err)
		taken <- d
	}()
	return taken
}

// requireWaiting fails if a take delivers a decision within 50ms: it should
// be waiting for a lock the test holds. A wait cannot be shown with the
// injected clock, which only the store reads; a take that returns early is
// caught unless the scheduler delays it past the window, which only hides
// a failure, never invents one.
func requireWaiting(t *testing.T, taken <-chan core.Decision, msg string) {
	t.Helper()
	select {
	case d := <-taken:
		t.Fatalf("%s: %+v", msg, d)
	case <-time.After(50 * time.Millisecond):
	}
}

// The layout the memory figures and the false-sharing padding rely on.
func TestLayout(t *testing.T) {
	assert.Equal(t, uintptr(128), unsafe.Sizeof(slots{}), "slots")
	assert.Equal(t, uintptr(128), unsafe.Sizeof(shard{}), "shard")
	assert.Zero(t, unsafe.Offsetof(Store{}.shards), "shards come first in Store")

	s, _ := newTestStore(t)
	ctx := context.Background()
	for alg, bytes := range map[core.Algorithm]int{core.GCRA: 16, core.TokenBucket: 24, core.FixedWindow: 24} {
		c := core.PolicyConfig{Name: alg.String(), Algorithm: alg, Quota: 10, Period: time.Second}
		if alg != core.FixedWindow {
			c.Burst = 10
		}
		p := core.MustPolicy(c)
		_, err := s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
		require.NoError(t, err)
		y := s.findTable(p).shards[shardIndex(s.hash("k"))].young.Load()
		assert.Equal(t, bytes, len(y.words)*8/y.len(), "bytes a slot of %v", alg)
	}
}

// newTestStore returns a store on a manual clock, without background sweep.
func newTestStore(t *testing.T) (*Store, *testClock) {
	clock := &testClock{now: time.Unix(2e9, 0)}
	s, err := New(WithClock(clock), WithSweepInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, clock
}

// A store nobody closes does not leak its sweep: once the store is
// unreachable the sweep ends, so the one-line adapters that build a store
// of their own need no Close.
func TestSweepEndsWithTheStore(t *testing.T) {
	s, err := New(WithSweepInterval(time.Millisecond))
	require.NoError(t, err)
	w := s.sweeper
	_, err = s.Take(context.Background(), core.Request{Key: "k", Policy: core.PerSecond(1), Cost: 1})
	require.NoError(t, err)
	s = nil // the only reference
	for range 1000 {
		runtime.GC()
		select {
		case <-w.done:
			return
		case <-time.After(time.Millisecond):
		}
	}
	t.Fatal("the sweep outlived its store through 1000 collections")
}

// A swap that read a one-word slot's word before the slot was held, and
// reads its state after, finds poison and gives up, leaving the state to
// the holder; a slot dropped or moved keeps its poison, so no late swap
// lands in it either.
func TestSwapNeverLandsInAHeldSlot(t *testing.T) {
	s, _ := newTestStore(t)
	p := core.MustPolicy(core.PolicyConfig{Name: "p", Algorithm: core.GCRA, Quota: 1, Period: time.Hour, Burst: 5})
	ctx := context.Background()
	_, err := s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
	require.NoError(t, err)
	h := s.hash("k")
	st := &s.findTable(p).shards[shardIndex(h)]
	y := st.young.Load()
	sp := &s.findTable(p).spec
	j, _, held := y.acquire(h, true)
	require.GreaterOrEqual(t, j, 0)
	require.Equal(t, uint64(poison), atomic.LoadUint64(&y.words[j+1]), "held: poisoned")

	// The interleaving: the word as the swap read it, the state as the
	// holder left it.
	atomic.AndUint64(&y.words[j], ^uint64(locked))
	var d core.Decision
	assert.False(t, y.swap(h, sp, p, s.now(), 1, &d))
	assert.Equal(t, uint64(poison), atomic.LoadUint64(&y.words[j+1]), "the swap wrote into a held slot")
	atomic.OrUint64(&y.words[j], locked)
	y.release(j, held)
	assert.True(t, y.swap(h, sp, p, s.now(), 1, &d), "released: swaps again")
	assert.Equal(t, int64(3), d.Remaining)

	// Moved: the old slots keep the state poisoned.
	i := shardIndex(h)
	s.shards[i].mu.Lock()
	ny := st.rebuild(y)
	s.shards[i].mu.Unlock()
	assert.Equal(t, tagOf(h)|moved, atomic.LoadUint64(&y.words[j]))
	assert.Equal(t, uint64(poison), atomic.LoadUint64(&y.words[j+1]))
	assert.False(t, y.swap(h, sp, p, s.now(), 1, &d))

	// Dropped: the same.
	require.NoError(t, s.Reset(ctx, "k", p))
	jn := int((h & ny.mask) * 2)
	for atomic.LoadUint64(&ny.words[jn])&^flagMask != tagOf(h) {
		jn = (jn + 2) % len(ny.words)
	}
	assert.Equal(t, tagOf(h)|dead, atomic.LoadUint64(&ny.words[jn]))
	assert.Equal(t, uint64(poison), atomic.LoadUint64(&ny.words[jn+1]))
	assert.False(t, ny.swap(h, sp, p, s.now(), 1, &d))
	d, err = s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
	require.NoError(t, err)
	assert.Equal(t, int64(4), d.Remaining, "dropped: full again")
}

// A one-word key marked contended still decides a denial on the hot path:
// a denial changes nothing, so it needs neither the shard lock nor the slot.
// What changes the state waits for the shard lock, as the mark asks.
func TestContendedKeyDeniesWithoutTheShardLock(t *testing.T) {
	s, clock := newTestStore(t)
	p := core.MustPolicy(core.PolicyConfig{Name: "p", Algorithm: core.GCRA, Quota: 1, Period: time.Hour, Burst: 1})
	ctx := context.Background()
	r := core.Request{Key: "k", Policy: p, Cost: 1}
	_, err := s.Take(ctx, r)
	require.NoError(t, err)
	h := s.hash("k")
	y := s.findTable(p).shards[shardIndex(h)].young.Load()
	j := int((h & y.mask) * 2)
	for atomic.LoadUint64(&y.words[j])&^flagMask != tagOf(h) {
		j = (j + 2) % len(y.words)
	}
	atomic.OrUint64(&y.words[j], contended)

	sh := s.shardOf(h)
	sh.mu.Lock()
	select {
	case d := <-takeAsync(t, s, r):
		assert.False(t, d.Allowed)
		assert.Equal(t, time.Hour, d.RetryAfter)
	case <-time.After(10 * time.Second):
		t.Fatal("a denial waited for the shard lock")
	}
	clock.Advance(time.Hour)
	taken := takeAsync(t, s, r)
	requireWaiting(t, taken, "took from a contended slot without the shard lock")
	sh.mu.Unlock()
	assert.True(t, (<-taken).Allowed)
	assert.Equal(t, tagOf(h)|contended, atomic.LoadUint64(&y.words[j]), "still marked, and let go")
}

// testClock is a clock that moves only when told to. This package's own
// tests cannot use sluicetest.ManualClock: package sluicetest imports
// memory (sluicetest.Store), which would make an import cycle.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// SleepUntil is never called: nothing here waits on the clock.
func (c *testClock) SleepUntil(context.Context, time.Time) error {
	panic("testClock: SleepUntil unused")
}

// AfterFunc is never called: nothing here arms a timer on the clock.
func (c *testClock) AfterFunc(time.Duration, func()) (stop func() bool) {
	panic("testClock: AfterFunc unused")
}

// Advance moves the clock by d (back, if d < 0).
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
