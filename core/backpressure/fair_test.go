package backpressure

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// waiters are requests queued by acquireAsync, by name.
type waiters struct {
	t  *testing.T
	l  *Limiter
	ch map[string]<-chan result
}

func newWaiters(t *testing.T, l *Limiter) *waiters {
	return &waiters{t: t, l: l, ch: map[string]<-chan result{}}
}

// add queues a request named name for key and class.
func (ws *waiters) add(name, key string, class core.Class) {
	ws.t.Helper()
	ws.ch[name] = acquireAsync(ws.t, context.Background(), ws.l, key, class, ws.l.Waiting()+1)
}

// next returns the name of the one request that has an answer (and the
// answer), failing if there is none or more than one.
func (ws *waiters) next() (string, result) {
	ws.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for name, ch := range ws.ch {
			select {
			case r := <-ch:
				delete(ws.ch, name)
				return name, r
			default:
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
	ws.t.Fatal("no waiter answered")
	return "", result{}
}

// admitOrder releases held, then each request admitted in turn, and
// returns the names in the order they were admitted.
func (ws *waiters) admitOrder(held Permit) []string {
	ws.t.Helper()
	var order []string
	for len(ws.ch) > 0 {
		held.Done(core.Succeeded)
		name, r := ws.next()
		require.NoError(ws.t, r.err, name)
		order = append(order, name)
		held = r.p
	}
	held.Release()
	return order
}

func TestFairAdmitsByWeight(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(1), Queue: 100, MaxWait: time.Minute, Fair: true, Weights: map[string]int{"a": 2}})
	holder, err := l.Acquire(ctx, "x", core.Default)
	require.NoError(t, err)
	ws := newWaiters(t, l)
	for i := 1; i <= 6; i++ {
		ws.add(fmt.Sprint("a", i), "a", core.Default)
	}
	for i := 1; i <= 6; i++ {
		ws.add(fmt.Sprint("b", i), "b", core.Default)
	}
	checkFair(t, l)
	// a's weight is 2: two of its requests for one of b's while both
	// wait, ties to the oldest; b's last ones alone.
	assert.Equal(t, []string{"a1", "b1", "a2", "a3", "b2", "a4", "a5", "b3", "a6", "b4", "b5", "b6"}, ws.admitOrder(holder))
	assert.Empty(t, l.keys)
}

// TestFairNewcomerWaitsNoMoreThanARound: a key that starts to wait behind
// a long queue of another's is admitted next; one that waited before gets
// no credit for the time it did not.
func TestFairNewcomerWaitsNoMoreThanARound(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(1), Queue: 100, MaxWait: time.Minute, Fair: true})
	holder, err := l.Acquire(ctx, "x", core.Default)
	require.NoError(t, err)
	ws := newWaiters(t, l)
	for i := 1; i <= 8; i++ {
		ws.add(fmt.Sprint("a", i), "a", core.Default)
	}
	holder.Done(core.Succeeded)
	name, r := ws.next()
	require.Equal(t, "a1", name)
	ws.add("b1", "b", core.Default)
	r.p.Done(core.Succeeded)
	name, r = ws.next()
	assert.Equal(t, "b1", name, "the newcomer goes next, not after a's 7")
	ws.add("b2", "b", core.Default)
	ws.add("b3", "b", core.Default)
	assert.Equal(t, []string{"a2", "b2", "a3", "b3", "a4", "a5", "a6", "a7", "a8"}, ws.admitOrder(r.p))
}

func TestFairFullQueueShedsTheHog(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(1), Queue: 4, MaxWait: time.Minute, Fair: true, Weights: map[string]int{"w": 3}})
	holder, err := l.Acquire(ctx, "x", core.Default)
	require.NoError(t, err)
	ws := newWaiters(t, l)
	for i := 1; i <= 4; i++ {
		ws.add(fmt.Sprint("a", i), "a", core.Default)
	}
	displaced := func(want string) {
		t.Helper()
		name, r := ws.next()
		assert.Equal(t, want, name)
		assert.Equal(t, Displaced, rejection(t, r.err).Reason)
	}
	ws.ch["b1"] = acquireAsync(t, ctx, l, "b", core.Default, 4)
	displaced("a4") // a's newest makes room
	ws.ch["c1"] = acquireAsync(t, ctx, l, "c", core.Default, 4)
	displaced("a3")
	_, err = l.Acquire(ctx, "a", core.Default)
	assert.Equal(t, QueueFull, rejection(t, err).Reason, "the hog sheds its own")
	_, err = l.Acquire(ctx, "b", core.Default)
	assert.Equal(t, QueueFull, rejection(t, err).Reason, "a holds 2, b would hold 2: no more than b")
	ws.ch["w1"] = acquireAsync(t, ctx, l, "w", core.Default, 4)
	displaced("a2") // a holds 2 for 1 of weight; w would hold 1 for 3
	ws.ch["w2"] = acquireAsync(t, ctx, l, "w", core.Default, 4)
	displaced("c1") // a, b and c hold 1 each, w would hold 2/3: the newest of theirs goes
	checkFair(t, l)
	assert.Equal(t, []string{"a1", "b1", "w1", "w2"}, ws.admitOrder(holder))
	assert.Empty(t, l.keys)
}

// TestFairClassesFirst: class priority comes before fair shares, and a
// full queue still sheds the lowest class first, its heaviest key's
// newest.
func TestFairClassesFirst(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(1), Queue: 5, MaxWait: time.Minute, Fair: true})
	holder, err := l.Acquire(ctx, "x", core.Default)
	require.NoError(t, err)
	ws := newWaiters(t, l)
	ws.add("s-a1", "a", core.Sheddable)
	ws.add("s-a2", "a", core.Sheddable)
	ws.add("s-b1", "b", core.Sheddable)
	ws.add("d-a1", "a", core.Default)
	ws.add("d-b1", "b", core.Default)
	ws.ch["c-b1"] = acquireAsync(t, ctx, l, "b", core.Critical, 5)
	name, r := ws.next()
	assert.Equal(t, "s-a2", name, "the heaviest sheddable key's newest")
	assert.Equal(t, Displaced, rejection(t, r.err).Reason)
	ws.ch["d-b2"] = acquireAsync(t, ctx, l, "b", core.Default, 5)
	name, _ = ws.next()
	assert.Equal(t, "s-b1", name, "a and b hold one each: the newest goes")
	assert.Equal(t, []string{"c-b1", "d-a1", "d-b1", "d-b2", "s-a1"}, ws.admitOrder(holder))
}

// TestFairHeadroom: Headroom holds back lower classes as without Fair.
func TestFairHeadroom(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(4), Headroom: Headroom{Critical: 0.5}, Queue: 4, MaxWait: time.Minute, Fair: true})
	var ps []Permit
	for range 2 {
		p, err := l.Acquire(ctx, "a", core.Default)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	ws := newWaiters(t, l)
	ws.add("d-b1", "b", core.Default)
	p, err := l.Acquire(ctx, "c", core.Critical)
	require.NoError(t, err, "critical takes the room only it may use")
	ps[0].Release()
	assert.Equal(t, 1, l.Waiting(), "2 in flight: default's room is full")
	ps[1].Release()
	name, r := ws.next()
	assert.Equal(t, "d-b1", name)
	p.Release()
	r.p.Release()
	assert.Empty(t, l.keys)
}

// TestFairPerKey: a key at its per-key limit leaves the schedule until it
// has room, and gets no credit for the time out.
func TestFairPerKey(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(3), PerKey: 1, Queue: 10, MaxWait: time.Minute, Fair: true})
	pa, err := l.Acquire(ctx, "a", core.Default)
	require.NoError(t, err)
	px, err := l.Acquire(ctx, "x", core.Default)
	require.NoError(t, err)
	py, err := l.Acquire(ctx, "y", core.Default)
	require.NoError(t, err)
	ws := newWaiters(t, l)
	ws.add("a1", "a", core.Default) // a is full: parked
	ws.add("b1", "b", core.Default)
	ws.add("c1", "c", core.Default)
	_, err = l.Acquire(ctx, "a", core.Default)
	assert.Equal(t, KeySaturated, rejection(t, err).Reason, "a key never has more waiting than PerKey")
	checkFair(t, l)
	px.Release()
	name, rb := ws.next()
	assert.Equal(t, "b1", name, "a is parked")
	pa.Release()
	name, ra := ws.next()
	assert.Equal(t, "a1", name, "a has room again: a's slot is its own")
	ws.add("b2", "b", core.Default)
	ws.add("a2", "a", core.Default)
	py.Release()
	name, rc := ws.next()
	assert.Equal(t, "c1", name)
	rb.p.Release()
	name, rb = ws.next()
	assert.Equal(t, "b2", name, "a is full again")
	checkFair(t, l)
	ra.p.Release()
	name, ra = ws.next()
	assert.Equal(t, "a2", name)
	for _, p := range []Permit{ra.p, rb.p, rc.p} {
		p.Release()
	}
	assert.Empty(t, l.keys)
}

// TestFairInventedKeysStayBounded: a client that invents a key per request
// gets a share per key, but the keys tracked are only those with requests
// in flight or waiting, at most MaxKeys, and all are gone once they are.
func TestFairInventedKeysStayBounded(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(4), Queue: 16, MaxWait: time.Minute, Fair: true, MaxKeys: 30})
	var ps []Permit
	for i := range 4 {
		p, err := l.Acquire(ctx, fmt.Sprint("held-", i), core.Default)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	ws := newWaiters(t, l)
	for i := range 16 {
		ws.add(fmt.Sprint("w", i), fmt.Sprint("waiting-", i), core.Default)
	}
	for i := range 10_000 {
		_, err := l.Acquire(ctx, fmt.Sprint("invented-", i), core.Default)
		require.Equal(t, QueueFull, rejection(t, err).Reason)
		require.Len(t, l.keys, 20)
		require.LessOrEqual(t, len(l.fair.idle), 30, "keys remembered idle: MaxKeys at most")
	}
	assert.Len(t, l.fair.idle, 30)
	assert.Len(t, l.fair.evict, 30)
	checkFair(t, l)
	assert.Len(t, ws.admitOrder(ps[0]), 16)
	for _, p := range ps[1:] {
		p.Release()
	}
	assert.Empty(t, l.keys)
}

// TestFairReturningKeyKeepsItsCredit: a key that was busy before and comes
// back after others had their share goes ahead of a key never seen, which
// starts at the virtual time (inventing keys buys no priority); both go
// ahead of the key that had its share.
func TestFairReturningKeyKeepsItsCredit(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(2), Queue: 10, MaxWait: time.Minute, Fair: true})
	p, err := l.Acquire(ctx, "b", core.Default)
	require.NoError(t, err)
	p.Release() // b is remembered
	x, err := l.Acquire(ctx, "x", core.Default)
	require.NoError(t, err)
	held, err := l.Acquire(ctx, "y", core.Default)
	require.NoError(t, err)
	ws := newWaiters(t, l)
	for i := 1; i <= 6; i++ {
		ws.add(fmt.Sprint("a", i), "a", core.Default)
	}
	x.Release()
	for i := 1; i <= 3; i++ { // a has its share: a1, a2, a3
		name, r := ws.next()
		require.Equal(t, fmt.Sprint("a", i), name)
		r.p.Release()
	}
	name, r := ws.next()
	require.Equal(t, "a4", name)
	ws.add("c1", "c", core.Default) // never seen
	ws.add("b1", "b", core.Default) // seen before a had its share
	assert.Equal(t, []string{"b1", "c1", "a5", "a6"}, ws.admitOrder(r.p))
	held.Release()
	assert.Empty(t, l.keys)
}

func TestFairTooManyKeys(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(2), Queue: 8, MaxWait: time.Minute, Fair: true, MaxKeys: 3})
	var ps []Permit
	for i := range 2 {
		p, err := l.Acquire(ctx, fmt.Sprint(i), core.Default)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	ws := newWaiters(t, l)
	ws.add("w", "2", core.Default)
	_, err := l.Acquire(ctx, "3", core.Default)
	assert.Equal(t, TooManyKeys, rejection(t, err).Reason)
	assert.Len(t, l.keys, 3)
	assert.Equal(t, []string{"w"}, ws.admitOrder(ps[0]))
	ps[1].Release()
	assert.Empty(t, l.keys)
}

func TestFairConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Controller: Static(1), Fair: true}, "Fair needs a Queue"},
		{Config{Controller: Static(1), Queue: 1, MaxWait: time.Second, Weights: map[string]int{"a": 2}}, "Weights are set without Fair"},
		{Config{Controller: Static(1), Queue: 1, MaxWait: time.Second, Fair: true, Weights: map[string]int{"a": 2, "b": 0}}, `Weights["b"] must be 1 to 10000, got 0`},
		{Config{Controller: Static(1), Queue: 1, MaxWait: time.Second, Fair: true, Weights: map[string]int{"c": 10_001, "d": -1}}, `Weights["c"] must be 1 to 10000, got 10001`},
	} {
		_, err := New(c.cfg)
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
	_, err := New(Config{Controller: Static(1), Queue: 1, MaxWait: time.Second, Fair: true, Weights: map[string]int{"a": 10_000, "b": 1}})
	assert.NoError(t, err)
}

// TestFairTagsWrap: virtual time that wraps around, or tags left far
// behind it, change no order.
func TestFairTagsWrap(t *testing.T) {
	ctx := context.Background()
	for _, start := range []uint64{0, 1<<63 - shareScale/2, 1<<64 - shareScale/2, 1<<64 - 1} {
		l, _, _ := newLimiter(t, Config{Controller: Static(1), Queue: 100, MaxWait: time.Minute, Fair: true, Weights: map[string]int{"a": 2}})
		for r := range l.fair.ranks {
			l.fair.ranks[r].vtime = start
		}
		holder, err := l.Acquire(ctx, "x", core.Default)
		require.NoError(t, err)
		ws := newWaiters(t, l)
		for i := 1; i <= 6; i++ {
			ws.add(fmt.Sprint("a", i), "a", core.Default)
		}
		for i := 1; i <= 6; i++ {
			ws.add(fmt.Sprint("b", i), "b", core.Default)
		}
		assert.Equal(t, []string{"a1", "b1", "a2", "a3", "b2", "a4", "a5", "b3", "a6", "b4", "b5", "b6"}, ws.admitOrder(holder), "from %d", start)
	}
}

// checkFair checks the books of l's fair queue.
func checkFair(t *testing.T, l *Limiter) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.NotNil(t, l.fair)
	for r := range l.fair.ranks {
		fr := &l.fair.ranks[r]
		for _, h := range []*flowHeap{&fr.ready, &fr.hogs} {
			for i, f := range h.fs {
				require.Equal(t, i, *h.at(f))
				require.Positive(t, f.n)
				if i > 0 {
					require.False(t, h.less(f, h.fs[(i-1)/2]), "heap order")
				}
			}
		}
	}
	total := 0
	for _, k := range l.keys {
		n := 0
		for r := range k.fair.flows {
			f := &k.fair.flows[r]
			m := 0
			for w := f.q.head; w != nil; w = w.next {
				m++
			}
			require.Equal(t, f.n, m)
			require.Equal(t, f.n > 0, f.hogAt >= 0)
			require.Equal(t, f.n > 0 && !l.keyFull(k), f.readyAt >= 0)
			require.Equal(t, uint64(f.n)*k.fair.cost, f.backlog)
			n += f.n
		}
		require.Equal(t, k.waiting, n)
		total += n
	}
	require.Equal(t, l.waiting, total)
}

// TestFairRandomRuns runs small random configurations of the fair-shares
// simulation (weights, classes, per-key limits, a limit that moves, queues
// that fill, waits that time out, keys beyond MaxKeys) and checks the fair
// queue's books whenever the Limiter is at rest, and that nothing is left
// once the load is over.
func TestFairRandomRuns(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 99))
		var tenants []tenantLoad
		for i := range 1 + rng.IntN(7) {
			tenants = append(tenants, tenantLoad{key: fmt.Sprint("t", i), weight: rng.IntN(4),
				rate: 20 + 400*rng.Float64(), class: core.Class(rng.IntN(numClasses))})
		}
		cfg := fairSimConfig{workers: 2 + rng.IntN(10), service: time.Duration(5+rng.IntN(40)) * time.Millisecond,
			spread: 0.5, timeout: time.Second, span: time.Second, tenants: tenants, fair: true,
			queue: 1 + rng.IntN(20), maxWait: time.Duration(1+rng.IntN(100)) * time.Millisecond,
			perKey: rng.IntN(4), maxKeys: 1 + rng.IntN(8), seed: seed,
			check: func(l *Limiter) { checkFair(t, l) }}
		if rng.IntN(2) == 0 {
			cfg.newController = func() Controller {
				a, err := NewAIMD(AIMDConfig{Initial: cfg.workers, Min: 1, Max: 3 * cfg.workers})
				require.NoError(t, err)
				return a
			}
		}
		res, err := runFairSim(cfg)
		require.NoError(t, err, "seed %d", seed)
		served := 0
		for _, r := range res {
			served += len(r.latencies)
		}
		assert.Positive(t, served, "seed %d", seed)
	}
}
