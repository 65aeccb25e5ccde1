package backpressure

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Limiter bounds the requests in flight: globally, to the limit its
// Controller sets, per key, to Config.PerKey, or both. A request that finds
// no free slot waits in a bounded queue or is shed with a *ShedError. It is
// safe for concurrent use.
type Limiter struct {
	mu       sync.Mutex
	ctl      Controller // nil: no global limit
	limit    int
	room     [numClasses]int // by rank: admit while inFlight is below
	inFlight int
	waiting  int
	queues   [numClasses]waitList // by rank, without Config.Fair
	fair     *fairQueue           // with Config.Fair, in place of queues
	keys     map[uint64]*keyEntry
	latency  float64 // moving mean of latencies, in nanoseconds

	seed       maphash.Seed
	perKey     int
	maxKeys    int
	queueCap   int
	maxWait    time.Duration
	headroom   Headroom
	maxLatency time.Duration
	minRetry   time.Duration
	clock      core.Clock
	observe    core.Observer
	name       string // Config.Name, in events

	freeSlots   []*slot
	freeWaiters []*waiter
	freeKeys    []*keyEntry
}

// Acquire admits a request of the given class, for the given key (ignored
// without Config.PerKey), waiting for a slot if the queue has room; the
// caller must free the Permit with Done or Release. It returns a *ShedError
// when it sheds the request (one whose deadline passed while it waited is
// shed with WaitTimeout, wrapping context.DeadlineExceeded), or ctx's error
// if ctx is canceled first; either way the request holds no slot.
func (l *Limiter) Acquire(ctx context.Context, key string, class core.Class) (Permit, error) {
	if class >= numClasses {
		return Permit{}, fmt.Errorf("backpressure: unknown class %d", uint8(class))
	}
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			l.mu.Lock()
			return l.shed(ctx, nil, key, class, WaitTimeout)
		}
		return Permit{}, err
	}
	var h uint64
	if l.keys != nil {
		h = maphash.String(l.seed, key)
	}
	now := l.clock.Now()
	rank := rank(class)
	l.mu.Lock()
	var k *keyEntry
	if l.keys != nil {
		if k = l.keys[h]; k == nil {
			if len(l.keys) >= l.maxKeys {
				return l.shed(ctx, nil, key, class, TooManyKeys)
			}
			k = l.newKey(h)
		}
	}
	if l.hasRoom(k, rank) {
		s := l.admit(ctx, k, rank, now)
		limit := l.limit
		l.mu.Unlock()
		if l.observe != nil {
			l.observe(ctx, core.Event{Kind: core.Admitted, Key: key, LimitName: l.name, Class: class, Limit: int64(limit)})
		}
		return Permit{s: s, gen: s.gen.Load()}, nil
	}
	reason := Saturated
	if l.keyFull(k) {
		reason = KeySaturated
	}
	if l.queueCap == 0 || (l.perKey > 0 && k.waiting >= l.perKey) {
		return l.shed(ctx, k, key, class, reason)
	}
	var victim *waiter
	if l.waiting >= l.queueCap {
		if victim = l.victim(k, rank); victim == nil {
			return l.shed(ctx, k, key, class, QueueFull)
		}
		l.unlink(victim)
		victim.state, victim.reason = shed, Displaced
		victim.ready <- struct{}{}
	}
	w := l.newWaiter(ctx, k, class)
	l.enqueue(w, rank)
	if victim != nil {
		l.dropIfIdle(victim.key)
	}
	w.stop = l.clock.AfterFunc(l.maxWait, w.expire)
	l.mu.Unlock()
	if l.observe != nil {
		l.observe(ctx, core.Event{Kind: core.Queued, Key: key, LimitName: l.name, Class: class})
	}
	return l.wait(ctx, w, key, now)
}

// Limit returns the global limit in force (math.MaxInt without a
// Controller).
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// InFlight returns the number of requests admitted and not yet done.
func (l *Limiter) InFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inFlight
}

// Waiting returns the number of requests in the queue.
func (l *Limiter) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting
}

// wait blocks until w is admitted, shed, or ctx ends.
func (l *Limiter) wait(ctx context.Context, w *waiter, key string, since time.Time) (Permit, error) {
	signaled := true
	select {
	case <-w.ready:
	case <-ctx.Done():
		signaled = false
	}
	l.mu.Lock()
	if !signaled {
		if w.state == waiting {
			l.unlink(w)
			w.state, w.reason = shed, endOf(ctx)
			l.dropIfIdle(w.key)
		} else {
			<-w.ready // sent under the lock when the state changed
		}
	}
	state, s, reason, class := w.state, w.slot, w.reason, w.class
	if state == granted && ctx.Err() != nil {
		l.finish(s, core.Ignored, l.clock.Now())
		state, reason = shed, endOf(ctx)
	}
	if w.stop == nil || w.stop() {
		l.recycle(w) // else the timer's call may yet come, and must find w as it is
	}
	var shedErr *ShedError
	if state != granted && reason != Canceled {
		shedErr = &ShedError{Reason: reason, Class: class, RetryAfter: l.retryAfter(), err: ctx.Err()}
	}
	l.mu.Unlock()
	if l.observe != nil {
		e := core.Event{Kind: core.Waited, Key: key, LimitName: l.name, Class: class, Waited: l.clock.Now().Sub(since)}
		switch {
		case state == granted:
		case shedErr != nil:
			e.Kind, e.Err = core.Shed, shedErr
		default:
			e.Kind, e.Err = core.Shed, ctx.Err()
		}
		l.observe(ctx, e)
	}
	switch {
	case state == granted:
		return Permit{s: s, gen: s.gen.Load()}, nil
	case shedErr == nil:
		return Permit{}, ctx.Err()
	}
	return Permit{}, shedErr
}

// endOf is the reason a request whose ctx ended while it waited was shed:
// a deadline that passed is a wait that timed out, whose caller is still
// there to be told when to come back; anything else (a client gone) is
// Canceled.
func endOf(ctx context.Context) Reason {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return WaitTimeout
	}
	return Canceled
}

// shed refuses a request that holds nothing, and unlocks l.
func (l *Limiter) shed(ctx context.Context, k *keyEntry, key string, class core.Class, reason Reason) (Permit, error) {
	retry := l.retryAfter()
	if reason == KeySaturated {
		retry = l.keyRetryAfter(k)
	}
	if k != nil {
		l.dropIfIdle(k)
	}
	shedErr := &ShedError{Reason: reason, Class: class, RetryAfter: retry, err: ctx.Err()}
	l.mu.Unlock()
	if l.observe != nil {
		l.observe(ctx, core.Event{Kind: core.Shed, Key: key, LimitName: l.name, Class: class, Err: shedErr})
	}
	return Permit{}, shedErr
}

// retryAfter estimates how long the work in flight and waiting takes to
// drain (see ShedError.RetryAfter).
func (l *Limiter) retryAfter() time.Duration {
	limit := l.limit
	if l.ctl == nil {
		limit = l.perKey * max(len(l.keys), 1)
	}
	return l.drain(l.inFlight+l.waiting, limit)
}

func (l *Limiter) drain(work, limit int) time.Duration {
	d := float64(work) * l.latency / float64(max(limit, 1))
	return time.Duration(math.Min(math.Max(d, float64(l.minRetry)), float64(max(maxRetryAfter, l.minRetry))))
}

// hasRoom reports whether a request of the given rank and key may be
// admitted now.
func (l *Limiter) hasRoom(k *keyEntry, rank int) bool {
	return l.inFlight < l.room[rank] && !l.keyFull(k)
}

// keyFull reports whether k has Config.PerKey requests in flight.
func (l *Limiter) keyFull(k *keyEntry) bool {
	return l.perKey > 0 && k.inFlight >= l.perKey
}

// setLimit sets the global limit and the room each class has under it.
func (l *Limiter) setLimit(n int) {
	if l.ctl == nil {
		l.limit = n
		l.room = [numClasses]int{n, n, n}
		return
	}
	n = min(max(n, 1), MaxLimit)
	l.limit = n
	critical := n - int(l.headroom.Critical*float64(n))
	l.room[rank(core.Critical)] = n
	l.room[rank(core.Default)] = critical
	l.room[rank(core.Sheddable)] = critical - int(l.headroom.Default*float64(n))
}

// dispatch admits waiting requests while there is room: the highest class
// first, first come first served within a class (or in fair shares of the
// keys, with Config.Fair), skipping requests whose own key is full.
func (l *Limiter) dispatch(now time.Time) {
	for l.waiting > 0 {
		w := l.next()
		if w == nil {
			return
		}
		l.take(w)
		w.slot = l.admit(w.ctx, w.key, rank(w.class), now)
		w.state = granted
		w.ready <- struct{}{}
	}
}

// next returns the waiter to admit next, or nil if none may be.
func (l *Limiter) next() *waiter {
	for rank := numClasses - 1; rank >= 0; rank-- {
		if l.inFlight >= l.room[rank] {
			return nil // lower classes have less room still
		}
		if l.fair != nil {
			if f := l.fair.next(rank); f != nil {
				return f.q.head // parked keys are out of the schedule
			}
			continue
		}
		for w := l.queues[rank].head; w != nil; w = w.next {
			if !l.keyFull(w.key) {
				return w
			}
		}
	}
	return nil
}

// victim returns the waiter a request of key k and class rank displaces
// from a full queue, or nil: the newest of the lowest class below rank;
// with Config.Fair, within the lowest such class, the newest of the key
// with the most waiters per unit of weight, and failing a lower class, the
// same of rank when that key holds more than k would.
func (l *Limiter) victim(k *keyEntry, rank int) *waiter {
	for r := 0; r < rank; r++ {
		if l.fair == nil {
			if w := l.queues[r].tail; w != nil {
				return w
			}
		} else if f := l.fair.hog(r); f != nil {
			return f.q.tail
		}
	}
	if l.fair == nil {
		return nil
	}
	f := l.fair.hog(rank)
	if f == nil || f.k == k {
		return nil
	}
	if mine := uint64(k.fair.flows[rank].n+1) * k.fair.cost; f.backlog > mine {
		return f.q.tail
	}
	return nil
}

// credit is how many requests a key that had less than its fair share
// may be admitted ahead of the keys that had theirs: as many as may wait.
func (l *Limiter) credit() int { return l.queueCap }

// enqueue puts w in the queue of its class.
func (l *Limiter) enqueue(w *waiter, rank int) {
	if l.fair != nil {
		l.fair.push(w, rank, !l.keyFull(w.key), l.credit())
	} else {
		l.queues[rank].push(w)
	}
	l.waiting++
	if w.key != nil {
		w.key.waiting++
	}
}

// unlink takes w out of its queue, when it leaves without a slot.
func (l *Limiter) unlink(w *waiter) {
	if l.fair != nil {
		l.fair.remove(w, rank(w.class))
	} else {
		l.queues[rank(w.class)].remove(w)
	}
	l.waiting--
	if w.key != nil {
		w.key.waiting--
	}
}

// take takes w, which next returned, out of its queue to admit it.
func (l *Limiter) take(w *waiter) {
	if l.fair == nil {
		l.unlink(w)
		return
	}
	l.fair.admitNext(&w.key.fair.flows[rank(w.class)])
	l.waiting--
	w.key.waiting--
}
