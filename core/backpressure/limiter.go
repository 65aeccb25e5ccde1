package backpressure

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"github.com/sluice-go/sluice/core"
)

// Limiter bounds the requests in flight: globally, to the limit its
// Controller sets, per key, to Config.PerKey, or both. A request that finds
// no free slot waits in a bounded queue or is shed with a *ShedError. It is
// safe for concurrent use.
type Limiter struct {
	mu       sync.Mutex
	alg      Controller // nil: no global limit
	limit    int
	room     [numClasses]int // by rank: admit while inFlight is below
	inFlight int
	waiting  int
	queues   [numClasses]waitList // by rank
	keys     map[uint64]*keyEntry
	latency  float64 // moving mean of latencies, in nanoseconds

	seed       maphash.Seed
	perKey     int
	maxKeys    int
	queueCap   int
	maxWait    time.Duration
	reserve    Headroom
	maxLatency time.Duration
	minRetry   time.Duration
	clock      core.Clock
	observe    core.Observer

	freeSlots   []*slot
	freeWaiters []*waiter
	freeKeys    []*keyEntry
}

// Config configures a Limiter.
type Config struct {
	// Controller sets the global limit: Static(n), NewAIMD or NewGradient.
	// Nil means no global limit, for a Limiter that limits per key only.
	Controller Controller
	// PerKey is the most requests in flight for one key (0: no per-key
	// limit, and Acquire ignores its key). A key waits in the queue like
	// any request, but never has more waiting than PerKey.
	PerKey int
	// MaxKeys bounds the keys tracked at once (default 65,536). Only keys
	// with requests in flight or waiting are tracked, and keys are stored
	// as 64-bit hashes, so memory stays bounded whatever keys clients
	// send; a request for a new key while MaxKeys are busy is shed.
	MaxKeys int
	// Queue is the most requests that may wait for a slot, all classes
	// together (0: none wait, a request is admitted or shed at once).
	Queue int
	// MaxWait is the longest a request waits in the queue before it is
	// shed. Required with a Queue.
	MaxWait time.Duration
	// Headroom keeps shares of the global limit from the lower classes.
	Headroom Headroom
	// MaxLatency is the latency past which a request that succeeded counts
	// as dropped for the algorithm: the guardrail that makes AIMD back off,
	// and Gradient too, whatever its baseline says (0: none).
	MaxLatency time.Duration
	// MinRetryAfter is the least RetryAfter a ShedError suggests (default
	// 1s, HTTP's smallest Retry-After).
	MinRetryAfter time.Duration
	// core.Clock tells the time (default core.SystemClock).
	core.Clock core.Clock
	// core.Observer sees what the Limiter does (default: nothing).
	core.Observer core.Observer
}

// Limits on Config values.
const (
	maxKeysCap  = 1 << 24
	maxQueueCap = 1 << 20
)

// maxRetryAfter bounds RetryAfter: past a minute, a client is better off
// trying again than trusting an estimate from a backlog that old.
const maxRetryAfter = time.Minute

// New returns a Limiter, or an error naming the setting at fault.
func New(c Config) (*Limiter, error) {
	if c.MaxKeys == 0 {
		c.MaxKeys = 1 << 16
	}
	if c.MinRetryAfter == 0 {
		c.MinRetryAfter = time.Second
	}
	if c.Clock == nil {
		c.Clock = core.SystemClock{}
	}
	switch {
	case c.Controller == nil && c.PerKey == 0:
		return nil, errors.New("backpressure: no Controller and no PerKey limit: nothing to limit")
	case c.Controller != nil && (c.Controller.Limit() < 1 || c.Controller.Limit() > MaxLimit):
		return nil, fmt.Errorf("backpressure: the algorithm's limit must be 1 to %d, got %d", MaxLimit, c.Controller.Limit())
	case c.PerKey < 0 || c.PerKey > MaxLimit:
		return nil, fmt.Errorf("backpressure: PerKey must be 0 to %d, got %d", MaxLimit, c.PerKey)
	case c.MaxKeys < 1 || c.MaxKeys > maxKeysCap:
		return nil, fmt.Errorf("backpressure: MaxKeys must be 1 to %d, got %d", maxKeysCap, c.MaxKeys)
	case c.Queue < 0 || c.Queue > maxQueueCap:
		return nil, fmt.Errorf("backpressure: Queue must be 0 to %d, got %d", maxQueueCap, c.Queue)
	case c.Queue > 0 && c.MaxWait <= 0:
		return nil, fmt.Errorf("backpressure: a Queue needs a positive MaxWait, got %v", c.MaxWait)
	case c.MaxWait < 0:
		return nil, fmt.Errorf("backpressure: MaxWait must not be negative, got %v", c.MaxWait)
	case !(c.Headroom.Critical >= 0 && c.Headroom.Default >= 0 && c.Headroom.Critical+c.Headroom.Default < 1):
		return nil, fmt.Errorf("backpressure: Headroom shares must be non-negative and sum to less than 1, got %+v", c.Headroom)
	case c.MaxLatency < 0:
		return nil, fmt.Errorf("backpressure: MaxLatency must not be negative, got %v", c.MaxLatency)
	case c.MinRetryAfter < 0 || c.MinRetryAfter > maxRetryAfter:
		return nil, fmt.Errorf("backpressure: MinRetryAfter must be 0 to %v, got %v", maxRetryAfter, c.MinRetryAfter)
	}
	l := &Limiter{
		alg:        c.Controller,
		seed:       maphash.MakeSeed(),
		perKey:     c.PerKey,
		maxKeys:    c.MaxKeys,
		queueCap:   c.Queue,
		maxWait:    c.MaxWait,
		reserve:    c.Headroom,
		maxLatency: c.MaxLatency,
		minRetry:   c.MinRetryAfter,
		clock:      c.Clock,
		observe:    c.Observer,
	}
	if c.PerKey > 0 {
		l.keys = make(map[uint64]*keyEntry)
	}
	l.setLimit(math.MaxInt)
	if c.Controller != nil {
		l.setLimit(c.Controller.Limit())
	}
	return l, nil
}

// Outcome is how a request went, as its caller reports it to Permit.Done.
type Outcome uint8

// Results.
const (
	// Succeeded: the request completed; its latency says how loaded the
	// service is.
	Succeeded Outcome = iota
	// Dropped: the request failed in a way that says the service is
	// overloaded (a timeout, a 503 from a dependency): adaptive algorithms
	// back off.
	Dropped
	// Ignored: the request says nothing about load (it failed on bad
	// input, its client went away, it panicked): its slot is freed and
	// nothing is learned.
	Ignored
)

// Permit is a slot held by an admitted request. Done or Release frees it;
// both may be called any number of times, from any goroutine, and only the
// first call counts. The zero Permit holds nothing.
type Permit struct {
	s   *slot
	gen uint64
}

// Done frees the slot and reports how the request went; the Limiter
// measures its latency from admission to this call.
func (p Permit) Done(r Outcome) {
	s := p.s
	if s == nil || s.gen.Load() != p.gen {
		return
	}
	l := s.l
	now := l.clock.Now()
	l.mu.Lock()
	if s.gen.Load() != p.gen {
		l.mu.Unlock()
		return
	}
	ctx, old := s.ctx, l.limit
	l.finish(s, r, now)
	e := core.Event{Kind: core.LimitChanged, OldLimit: old, NewLimit: l.limit, InFlight: l.inFlight, Waiting: l.waiting}
	l.mu.Unlock()
	if e.NewLimit != old && l.observe != nil {
		l.observe(ctx, e)
	}
}

// Release frees the slot without reporting a result (as Done(Ignored)).
// Deferred right after Acquire, it frees the slot on every path, panics
// included; a Done before it makes it a no-op.
func (p Permit) Release() { p.Done(Ignored) }

// Acquire admits a request of the given class, for the given key (ignored
// without Config.PerKey), waiting for a slot if the queue has room. It
// returns a *ShedError when it sheds the request, and ctx's error when ctx
// is canceled first (a request whose context ends while it waits never
// holds a slot). A request whose deadline passes before it gets a slot is
// shed, a *ShedError with Reason WaitTimeout and a RetryAfter, which
// wraps context.DeadlineExceeded: its caller (a server's own deadline) is
// still there to be told when to come back, where a canceled one is most
// likely gone. The caller must free an admitted request's Permit, with
// Done or Release.
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
	if l.perKey > 0 {
		h = maphash.String(l.seed, key)
	}
	now := l.clock.Now()
	rank := class.rank()
	l.mu.Lock()
	var k *keyEntry
	if l.perKey > 0 {
		if k = l.keys[h]; k == nil {
			if len(l.keys) >= l.maxKeys {
				return l.shed(ctx, nil, key, class, TooManyKeys)
			}
			k = l.newKey(h)
		}
	}
	if l.hasRoom(k, rank) {
		s := l.admit(ctx, k, now)
		l.mu.Unlock()
		return Permit{s: s, gen: s.gen.Load()}, nil
	}
	reason := Saturated
	if k != nil && k.inFlight >= l.perKey {
		reason = KeySaturated
	}
	if l.queueCap == 0 || (k != nil && k.waiting >= l.perKey) {
		return l.shed(ctx, k, key, class, reason)
	}
	var victim *waiter
	if l.waiting >= l.queueCap {
		if victim = l.lowestBelow(rank); victim == nil {
			return l.shed(ctx, k, key, class, QueueFull)
		}
		l.unlink(victim)
		victim.state, victim.reason = shed, Displaced
		victim.ready <- struct{}{}
	}
	w := l.newWaiter(ctx, k, class)
	l.queues[rank].push(w)
	l.waiting++
	if k != nil {
		k.waiting++
	}
	if victim != nil {
		l.dropIfIdle(victim.key)
	}
	w.timer = l.clock.AfterFunc(l.maxWait, w.expire)
	e := core.Event{Kind: core.Queued, Class: class, Key: key, InFlight: l.inFlight, Waiting: l.waiting}
	l.mu.Unlock()
	if l.observe != nil {
		l.observe(ctx, e)
	}
	return l.wait(ctx, w, key, now)
}

// Limit returns the global limit in force (math.MaxInt without an
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
		l.finish(s, Ignored, l.clock.Now())
		state, reason = shed, endOf(ctx)
	}
	if w.timer == nil || w.timer.Stop() {
		l.recycle(w) // else the timer's call may yet come, and must find w as it is
	}
	var rej *ShedError
	if state != granted && reason != Canceled {
		rej = &ShedError{Reason: reason, Class: class, RetryAfter: l.retryAfter(), err: ctx.Err()}
	}
	e := core.Event{Kind: core.Shed, Class: class, Key: key, Reason: reason, InFlight: l.inFlight, Waiting: l.waiting, ShedError: rej}
	l.mu.Unlock()
	if state == granted {
		e.Kind, e.Reason = core.Waited, 0
	}
	if l.observe != nil {
		e.Wait = l.clock.Now().Sub(since)
		l.observe(ctx, e)
	}
	switch {
	case state == granted:
		return Permit{s: s, gen: s.gen.Load()}, nil
	case rej == nil:
		return Permit{}, ctx.Err()
	}
	return Permit{}, rej
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
	rej := &ShedError{Reason: reason, Class: class, RetryAfter: retry, err: ctx.Err()}
	e := core.Event{Kind: core.Shed, Class: class, Key: key, Reason: reason, InFlight: l.inFlight, Waiting: l.waiting, ShedError: rej}
	l.mu.Unlock()
	if l.observe != nil {
		l.observe(ctx, e)
	}
	return Permit{}, rej
}

// retryAfter estimates how long the work in flight and waiting takes to
// drain (see ShedError.RetryAfter).
func (l *Limiter) retryAfter() time.Duration {
	limit := l.limit
	if l.alg == nil {
		limit = l.perKey * max(len(l.keys), 1)
	}
	return l.drain(l.inFlight+l.waiting, limit)
}

// keyRetryAfter is retryAfter for one key's work.
func (l *Limiter) keyRetryAfter(k *keyEntry) time.Duration {
	return l.drain(k.inFlight+k.waiting, l.perKey)
}

func (l *Limiter) drain(work, limit int) time.Duration {
	d := float64(work) * l.latency / float64(max(limit, 1))
	return time.Duration(math.Min(math.Max(d, float64(l.minRetry)), float64(max(maxRetryAfter, l.minRetry))))
}

// hasRoom reports whether a request of the given rank and key may be
// admitted now.
func (l *Limiter) hasRoom(k *keyEntry, rank int) bool {
	return l.inFlight < l.room[rank] && (k == nil || k.inFlight < l.perKey)
}

// admit takes a slot for a request.
func (l *Limiter) admit(ctx context.Context, k *keyEntry, now time.Time) *slot {
	l.inFlight++
	if k != nil {
		k.inFlight++
	}
	var s *slot
	if n := len(l.freeSlots); n > 0 {
		s = l.freeSlots[n-1]
		l.freeSlots = l.freeSlots[:n-1]
	} else {
		s = &slot{l: l}
	}
	s.ctx, s.key, s.start, s.inFlight = ctx, k, now, l.inFlight
	return s
}

// finish frees s, feeds its result to the algorithm, and admits waiters
// into the room it leaves.
func (l *Limiter) finish(s *slot, r Outcome, now time.Time) {
	s.gen.Add(1)
	l.inFlight--
	k := s.key
	if k != nil {
		k.inFlight--
	}
	if r == Succeeded || r == Dropped { // any other value teaches nothing, as Ignored
		latency := max(now.Sub(s.start), 0)
		if l.latency == 0 {
			l.latency = float64(latency)
		} else {
			l.latency += (float64(latency) - l.latency) / 16
		}
		if l.alg != nil {
			dropped := r == Dropped || (l.maxLatency > 0 && latency > l.maxLatency)
			l.setLimit(l.alg.Update(Sample{At: now, Latency: latency, InFlight: s.inFlight, Dropped: dropped}))
		}
	}
	l.dispatch(now)
	if k != nil {
		l.dropIfIdle(k)
	}
	s.ctx, s.key = nil, nil
	if len(l.freeSlots) < maxFree {
		l.freeSlots = append(l.freeSlots, s)
	}
}

// maxFree bounds each free list: beyond it, freed objects go to the garbage
// collector.
const maxFree = 1 << 12

// setLimit sets the global limit and the room each class has under it.
func (l *Limiter) setLimit(n int) {
	if l.alg == nil {
		l.limit = n
		l.room = [numClasses]int{n, n, n}
		return
	}
	n = min(max(n, 1), MaxLimit)
	l.limit = n
	critical := n - int(l.reserve.Critical*float64(n))
	l.room[Critical.rank()] = n
	l.room[Default.rank()] = critical
	l.room[Sheddable.rank()] = critical - int(l.reserve.Default*float64(n))
}

// dispatch admits waiting requests while there is room: the highest class
// first, first come first served within a class, skipping requests whose
// own key is full.
func (l *Limiter) dispatch(now time.Time) {
	for l.waiting > 0 {
		w := l.next()
		if w == nil {
			return
		}
		l.unlink(w)
		w.slot = l.admit(w.ctx, w.key, now)
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
		for w := l.queues[rank].head; w != nil; w = w.next {
			if w.key == nil || w.key.inFlight < l.perKey {
				return w
			}
		}
	}
	return nil
}

// lowestBelow returns the newest waiter of the lowest class below rank, the
// one a request of that rank displaces from a full queue, or nil.
func (l *Limiter) lowestBelow(rank int) *waiter {
	for r := 0; r < rank; r++ {
		if w := l.queues[r].tail; w != nil {
			return w
		}
	}
	return nil
}

// unlink takes w out of its queue.
func (l *Limiter) unlink(w *waiter) {
	l.queues[w.class.rank()].remove(w)
	l.waiting--
	if w.key != nil {
		w.key.waiting--
	}
}

// slot is the state of one admitted request. Slots are reused; gen tells a
// Permit whether its slot is still the one it was given.
type slot struct {
	gen      atomic.Uint64
	l        *Limiter
	ctx      context.Context // the request's, for the events its completion causes
	key      *keyEntry
	start    time.Time
	inFlight int
}

// keyEntry counts one key's requests. It exists while the key has some in
// flight or waiting.
type keyEntry struct {
	hash              uint64
	inFlight, waiting int
}

func (l *Limiter) newKey(h uint64) *keyEntry {
	var k *keyEntry
	if n := len(l.freeKeys); n > 0 {
		k = l.freeKeys[n-1]
		l.freeKeys = l.freeKeys[:n-1]
	} else {
		k = new(keyEntry)
	}
	k.hash = h
	l.keys[h] = k
	return k
}

// dropIfIdle forgets k once it has nothing in flight or waiting.
func (l *Limiter) dropIfIdle(k *keyEntry) {
	if k == nil || k.inFlight > 0 || k.waiting > 0 {
		return
	}
	delete(l.keys, k.hash)
	if len(l.freeKeys) < maxFree {
		l.freeKeys = append(l.freeKeys, k)
	}
}
