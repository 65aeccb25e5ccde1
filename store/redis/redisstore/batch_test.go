package redisstore

import (
	"context"
	"fmt"
	"github.com/sluice-go/sluice/sluicetest"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/storetest"
)

// batchPolicies are the policies of the batched differential test: every
// algorithm, rates that do not divide evenly.
var batchPolicies = []*core.Policy{
	core.MustPolicy(core.PolicyConfig{Name: "b-tb", Algorithm: core.TokenBucket, Quota: 3, Period: time.Second, Burst: 10}),
	core.MustPolicy(core.PolicyConfig{Name: "b-gcra", Algorithm: core.GCRA, Quota: 7, Period: 10 * time.Second, Burst: 5}),
	core.MustPolicy(core.PolicyConfig{Name: "b-leaky", Algorithm: core.LeakyBucket, Quota: 1, Period: 7 * time.Millisecond, Burst: 4}),
	core.MustPolicy(core.PolicyConfig{Name: "b-fixed", Algorithm: core.FixedWindow, Quota: 7, Period: 10 * time.Millisecond}),
	core.MustPolicy(core.PolicyConfig{Name: "b-log", Algorithm: core.SlidingLog, Quota: 6, Period: 20 * time.Millisecond}),
	core.MustPolicy(core.PolicyConfig{Name: "b-counter", Algorithm: core.SlidingCounter, Quota: 9, Period: 30 * time.Millisecond}),
	core.MustPolicy(core.PolicyConfig{Name: "b-queue", Algorithm: core.LeakyQueue, Quota: 1, Period: 3 * time.Millisecond, Burst: 2, MaxDelay: 10 * time.Millisecond}),
}

// batchedDifferential sends random batches of operations (takes, layered
// takes, adjustments and resets, on a few keys, each at its own time) to
// the store in one round trip each, and requires every decision to equal
// what store/memory decides for the same operations one by one, in order.
// With sameSlot, a layered take's layers share their user key, so that on a
// Cluster every operation is decided by one script (layers across slots are
// decided alike only one request at a time: see the package
// documentation).
func batchedDifferential(t *testing.T, c goredis.UniversalClient, batches int, seed uint64, sameSlot bool) {
	rng := rand.New(rand.NewPCG(seed, 0xba7c4))
	clock := sluicetest.NewManualClock(storetest.Epoch.Add(time.Duration(rng.Int64N(int64(time.Hour))).Truncate(time.Microsecond)))
	s := newTestStore(t, c, WithClock(clock))
	ref, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ref.Close() })
	ns := randomHex(4) + ":"
	keys := []string{ns + "a", ns + "b", ns + "c"}
	ctx := context.Background()

	type planned struct {
		kind opKind
		now  time.Time
		reqs []core.Request
		desc string
	}
	for b := range batches {
		var plan []planned
		for range 1 + rng.IntN(16) {
			clock.Advance(time.Duration(rng.Int64N(4000)) * time.Microsecond * time.Duration(rng.IntN(2)))
			p, k := batchPolicies[rng.IntN(len(batchPolicies))], keys[rng.IntN(len(keys))]
			cost := 1 + rng.Int64N(p.Burst()+1)
			pl := planned{now: clock.Now()}
			switch r := rng.IntN(10); {
			case r < 5:
				pl.kind, pl.reqs = opTake, []core.Request{{Key: k, Policy: p, Cost: cost}}
			case r < 8:
				pl.kind = opTake
				for range 2 + rng.IntN(2) {
					q, j := batchPolicies[rng.IntN(len(batchPolicies))], keys[rng.IntN(len(keys))]
					if sameSlot {
						j = k
					}
					pl.reqs = append(pl.reqs, core.Request{Key: j, Policy: q, Cost: 1 + rng.Int64N(q.Burst())})
				}
			case r < 9:
				delta := 1 + rng.Int64N(p.Burst())
				if rng.IntN(2) == 0 {
					delta = -delta
				}
				pl.kind, pl.reqs = opAdjust, []core.Request{{Key: k, Policy: p, Cost: delta}}
			default:
				pl.kind, pl.reqs = opReset, []core.Request{{Key: k, Policy: p}}
			}
			var desc strings.Builder
			fmt.Fprintf(&desc, "kind %d at +%v:", pl.kind, pl.now.Sub(storetest.Epoch))
			for _, r := range pl.reqs {
				fmt.Fprintf(&desc, " %s/%s:%d", r.Policy.Name(), r.Key[len(ns):], r.Cost)
			}
			pl.desc = desc.String()
			plan = append(plan, pl)
		}

		batch := make([]*op, len(plan))
		for i, pl := range plan {
			o := s.pipe.get(pl.kind, pl.now.UnixMicro())
			for _, r := range pl.reqs {
				pi := s.info(r.Policy)
				o.layers = append(o.layers, layer{key: pi.key(r.Key), info: pi, cost: r.Cost})
			}
			batch[i] = o
		}
		require.NoError(t, s.send(ctx, batch))

		for i, pl := range plan {
			clock.Set(pl.now)
			want := make([]core.Decision, len(pl.reqs))
			switch pl.kind {
			case opTake:
				require.NoError(t, ref.TakeAll(ctx, pl.reqs, want))
			case opAdjust:
				want[0], err = ref.Adjust(ctx, pl.reqs[0])
				require.NoError(t, err)
			case opReset:
				require.NoError(t, ref.Reset(ctx, pl.reqs[0].Key, pl.reqs[0].Policy))
			}
			o := batch[i]
			require.NoError(t, o.err, "batch %d op %d: %s", b, i, pl.desc)
			if pl.kind == opReset {
				continue
			}
			for j, r := range pl.reqs {
				got := decision(r.Policy, o.out[4*j:])
				if want[j] != got {
					var all []string
					for _, pl := range plan {
						all = append(all, pl.desc)
					}
					t.Fatalf("batch %d (seed %d), op %d layer %d: %s\nmemory: %+v\nredis:  %+v\nbatch:\n  %s",
						b, seed, i, j, pl.desc, want[j], got, strings.Join(all, "\n  "))
				}
			}
		}
		clock.Set(plan[len(plan)-1].now)
	}
}

// TestBatchedDifferential: batches decide exactly as their operations one
// by one do, on one server.
func TestBatchedDifferential(t *testing.T) {
	batchedDifferential(t, sharedClient(t), 2000, testSeed(t), false)
}

// TestBatchReachesItsCallers: operations that wait together go in one
// round trip, and each caller gets its own decision: distinct keys and
// costs in one batch. A delay line keeps the one connection busy while they
// queue.
func TestBatchReachesItsCallers(t *testing.T) {
	c := sharedClient(t)
	px := startProxy(t, redisAddr())
	slow := goredis.NewClient(clientOptions(px.addr()))
	t.Cleanup(func() { _ = slow.Close() })
	s := newTestStore(t, slow, WithConns(1), WithTimeout(time.Minute))
	n := hook(s)
	ctx := context.Background()
	p := core.MustPolicy(core.PolicyConfig{Name: "callers", Algorithm: core.TokenBucket, Quota: 1, Period: time.Hour, Burst: 100})
	_, err := s.Take(ctx, core.Request{Key: "warm", Policy: p, Cost: 1}) // opens the connection
	require.NoError(t, err)
	before := n.roundTrips()

	px.delay.Store(int64(300 * time.Millisecond))
	first := make(chan error, 1)
	go func() {
		_, err := s.Take(ctx, core.Request{Key: "first", Policy: p, Cost: 1})
		first <- err
	}()
	require.Eventually(t, func() bool { return n.roundTrips() > before }, 10*time.Second, time.Millisecond, "the first call is on its way")

	const callers = 40
	var wg sync.WaitGroup
	got := make([]core.Decision, callers)
	for i := range callers {
		wg.Go(func() {
			d, err := s.Take(ctx, core.Request{Key: fmt.Sprint("caller-", i), Policy: p, Cost: int64(1 + i)})
			if assert.NoError(t, err) {
				got[i] = d
			}
		})
	}
	wg.Wait()
	require.NoError(t, <-first)
	for i, d := range got {
		assert.True(t, d.Allowed, "caller %d", i)
		assert.Equal(t, int64(100-1-i), d.Remaining, "caller %d got its own key's decision", i)
	}
	trips := n.roundTrips() - before
	t.Logf("%d decisions in %d round trips", callers+1, trips)
	assert.Less(t, trips, int64(callers/2), "the callers that waited went together")
	// And the state is theirs: each key holds what its caller took.
	for i := range callers {
		raw, err := c.Get(ctx, s.Key(fmt.Sprint("caller-", i), p)).Result()
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(raw, fmt.Sprint(100-1-i, ":")), "caller %d: %s", i, raw)
	}
}

// TestBatchedTakes: a batch of lone Takes under GCRA or a token bucket, the
// common batch, has a script of its own (takes_*.lua) that reads each key
// once and writes it once. Its decisions equal store/memory's one by one,
// on keys that repeat within a batch, at costs up to beyond the burst (an
// impossible request), each at its own time; and the state it leaves in
// Redis is the state the same Takes leave when each is sent alone.
func TestBatchedTakes(t *testing.T) {
	c := sharedClient(t)
	seed := testSeed(t)
	for _, alg := range []core.Algorithm{core.GCRA, core.TokenBucket} {
		t.Run(alg.String(), func(t *testing.T) {
			policies := []*core.Policy{
				core.MustPolicy(core.PolicyConfig{Name: "bt-a", Algorithm: alg, Quota: 7, Period: 10 * time.Second, Burst: 5}),
				core.MustPolicy(core.PolicyConfig{Name: "bt-b", Algorithm: alg, Quota: 3, Period: 7 * time.Millisecond, Burst: 1}),
			}
			rng := rand.New(rand.NewPCG(seed, uint64(alg)))
			clock := sluicetest.NewManualClock(storetest.Epoch.Add(time.Duration(rng.Int64N(int64(time.Hour))).Truncate(time.Microsecond)))
			s := newTestStore(t, c, WithClock(clock))
			alone := newTestStore(t, c, WithClock(clock))
			ref, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
			require.NoError(t, err)
			t.Cleanup(func() { _ = ref.Close() })
			keys := []string{"a", "b", "c"}
			ctx := context.Background()
			usedBatch := 0
			for b := range 1000 {
				var reqs []core.Request
				var times []time.Time
				batch := make([]*op, 2+rng.IntN(23))
				for i := range batch {
					clock.Advance(time.Duration(rng.Int64N(3000)) * time.Microsecond * time.Duration(rng.IntN(2)))
					p := policies[rng.IntN(len(policies))]
					r := core.Request{Key: keys[rng.IntN(len(keys))], Policy: p, Cost: 1 + rng.Int64N(p.Burst()+1)}
					reqs, times = append(reqs, r), append(times, clock.Now())
					pi := s.info(p)
					batch[i] = s.pipe.get(opTake, clock.Now().UnixMicro())
					batch[i].layers = append(batch[i].layers, layer{key: pi.key(r.Key), info: pi, cost: r.Cost})
				}
				if sc, _ := s.takes(partsOf(batch)); sc == takesScripts[alg] {
					usedBatch++
				}
				require.NoError(t, s.send(ctx, batch))
				for i, r := range reqs {
					clock.Set(times[i])
					want, err := ref.Take(ctx, r)
					require.NoError(t, err)
					require.NoError(t, batch[i].err)
					require.Equal(t, want, decision(r.Policy, batch[i].out), "batch %d (seed %d) take %d: %s:%d at +%v",
						b, seed, i, r.Key, r.Cost, times[i].Sub(storetest.Epoch))
					pi := alone.info(r.Policy)
					o := alone.pipe.get(opTake, times[i].UnixMicro())
					o.layers = append(o.layers, layer{key: pi.key(r.Key), info: pi, cost: r.Cost})
					require.NoError(t, alone.send(ctx, []*op{o}))
					require.Equal(t, want, decision(r.Policy, o.out), "alone")
				}
				for _, p := range policies {
					for _, k := range keys {
						got, errGot := c.Get(ctx, s.Key(k, p)).Result()
						want, errWant := c.Get(ctx, alone.Key(k, p)).Result()
						require.Equal(t, errWant, errGot, "batch %d: %s/%s present alike", b, p.Name(), k)
						require.Equal(t, want, got, "batch %d: %s/%s holds the same state", b, p.Name(), k)
						if errGot == nil {
							ttl, err := c.PTTL(ctx, s.Key(k, p)).Result()
							require.NoError(t, err)
							require.Positive(t, ttl, "the key expires")
						}
					}
				}
			}
			require.Equal(t, 1000, usedBatch, "every batch went through the batch script")
		})
	}
}

// partsOf returns a batch's parts, as send makes them.
func partsOf(batch []*op) []part {
	parts := make([]part, len(batch))
	for i, o := range batch {
		parts[i] = part{o: o}
	}
	return parts
}

// TestUnbatchedPipelines: WithBatch(1) sends each decision in a script call
// of its own, but the decisions that wait while the one connection is busy
// go together in one pipelined round trip, so that its connections never
// cap the calls in flight below what a pool of a connection per caller
// gives. Each caller gets its own decision, and Redis runs one script call
// per decision.
func TestUnbatchedPipelines(t *testing.T) {
	sharedClient(t) // skips without Redis
	px := startProxy(t, redisAddr())
	slow := goredis.NewClient(clientOptions(px.addr()))
	t.Cleanup(func() { _ = slow.Close() })
	s := newTestStore(t, slow, WithBatch(1), WithConns(1), WithTimeout(time.Minute))
	n := hook(s)
	ctx := context.Background()
	p := core.MustPolicy(core.PolicyConfig{Name: "unbatched", Algorithm: core.GCRA, Quota: 1, Period: time.Hour, Burst: 100})
	_, err := s.Take(ctx, core.Request{Key: "warm", Policy: p, Cost: 1})
	require.NoError(t, err)
	before, calls := n.roundTrips(), n.commands.Load()+n.pipelined.Load()

	px.delay.Store(int64(300 * time.Millisecond))
	first := make(chan error, 1)
	go func() {
		_, err := s.Take(ctx, core.Request{Key: "first", Policy: p, Cost: 1})
		first <- err
	}()
	require.Eventually(t, func() bool { return n.roundTrips() > before }, 10*time.Second, time.Millisecond, "the first call is on its way")

	const callers = 40
	var wg sync.WaitGroup
	got := make([]core.Decision, callers)
	for i := range callers {
		wg.Go(func() {
			d, err := s.Take(ctx, core.Request{Key: fmt.Sprint("caller-", i), Policy: p, Cost: int64(1 + i)})
			if assert.NoError(t, err) {
				got[i] = d
			}
		})
	}
	wg.Wait()
	require.NoError(t, <-first)
	for i, d := range got {
		assert.True(t, d.Allowed, "caller %d", i)
		assert.Equal(t, int64(100-1-i), d.Remaining, "caller %d got its own key's decision", i)
	}
	trips := n.roundTrips() - before
	t.Logf("%d decisions in %d round trips", callers+1, trips)
	assert.Less(t, trips, int64(callers/2), "the callers that waited went together")
	assert.Equal(t, int64(callers+1), n.commands.Load()+n.pipelined.Load()-calls, "one script call per decision")
}
