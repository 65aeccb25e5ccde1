package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Limiter decides requests on a Store, applies its failure mode or fallback
// when the store fails, and reports to its Observer. Take, TakeAll,
// TakeTurn and Reserve each return the Decision to report; none waits for
// units to come back, only TakeTurn for a LeakyQueue turn. It is safe for
// concurrent use.
type Limiter struct {
	store      Store
	failClosed bool
	failRetry  time.Duration // a fail-closed decision's RetryAfter
	fallback   Store
	share      int      // each limit's share the fallback applies: 1/share
	shares     sync.Map // *Policy -> *Policy, its share
	nShares    atomic.Int64
	observe    Observer
	timed      bool      // events carry the store's latency
	epoch      time.Time // what latencies are read from: one clock read each
	nearLimit  float64
	clock      Clock // what TakeTurn reads and waits on
}

// NewLimiter returns a Limiter deciding on store, or the error of the first
// option at fault.
func NewLimiter(store Store, opts ...Option) (*Limiter, error) {
	if store == nil {
		return nil, errors.New("sluice: nil store")
	}
	l := &Limiter{store: store, share: 1, timed: true, epoch: time.Now(), nearLimit: 0.1, clock: SystemClock{}}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	if o, ok := store.(Observable); ok && l.observe != nil {
		o.Observe(l.observe)
	}
	return l, nil
}

// Take decides one request. The error, a *RequestError, is non-nil only
// for a malformed request (nil policy, cost out of range); a store failure
// is not an error here but a Degraded decision following the failure mode.
func (l *Limiter) Take(ctx context.Context, r Request) (Decision, error) {
	if r.Policy == nil || r.Cost < 1 || r.Cost > maxCost || l.observe != nil {
		return l.takeSlow(ctx, r)
	}
	d, err := l.store.Take(ctx, r)
	if err != nil {
		return l.takeFailed(ctx, r, err), nil
	}
	return d, nil
}

// takeSlow is Take for a malformed request or a limiter with an observer,
// out of line so that Take's own frame stays small.
//
//go:noinline
func (l *Limiter) takeSlow(ctx context.Context, r Request) (Decision, error) {
	if r.Policy == nil || r.Cost < 1 || r.Cost > maxCost {
		return Decision{}, checkCost(r, "cost", 1)
	}
	return l.takeObserved(ctx, r), nil
}

// takeFailed is Take's decision when the store failed: the fallback's, or
// the failure mode's.
//
//go:noinline
func (l *Limiter) takeFailed(ctx context.Context, r Request, err error) Decision {
	d, _ := l.degrade(ctx, r, err)
	return d
}

// takeObserved is Take for a limiter with an observer.
func (l *Limiter) takeObserved(ctx context.Context, r Request) Decision {
	start := l.elapsed()
	d, err := l.store.Take(ctx, r)
	if err != nil {
		d, err = l.degrade(ctx, r, err)
	}
	l.report(ctx, r.Key, d, err, l.elapsed()-start)
	return d
}

// elapsed returns the monotonic time since the limiter was made, to time
// the store with (one clock read, where time.Now takes two), or zero if
// events carry no latency.
func (l *Limiter) elapsed() time.Duration {
	if !l.timed {
		return 0
	}
	return time.Since(l.epoch)
}

// TakeAll decides several requests as one (see Store.TakeAll), writes each
// one's decision to ds (if not nil) and returns the one to report: the most
// restrictive. A request denied by any policy takes nothing from the others.
func (l *Limiter) TakeAll(ctx context.Context, rs []Request, ds []Decision) (Decision, error) {
	d, _, err := l.takeAll(ctx, rs, ds, nil)
	return d, err
}

// TakeTurn decides rs as TakeAll does, then holds the caller until the
// request's turn (the Decision's Delay, the longest of its layers) has come.
// A nil error means: serve the request now if the decision is Allowed,
// answer it as denied otherwise.
//
// If ctx's deadline falls before the turn, the request does not wait: its
// units go back and it is reported denied, with the offered Delay as
// RetryAfter. If ctx ends while it waits, its turn goes back
// (Store.ReturnTurn) and TakeTurn returns an error wrapping ctx.Err(): the
// request must not be served. The observer sees Queued, then Waited or Shed.
func (l *Limiter) TakeTurn(ctx context.Context, rs []Request, ds []Decision) (Decision, error) {
	if ds == nil {
		ds = make([]Decision, len(rs))
	}
	var turn time.Time
	d, used, err := l.takeAll(ctx, rs, ds, &turn)
	if err != nil || !d.Allowed || d.Delay <= 0 {
		return d, err
	}
	var (
		e     Event
		start time.Time
	)
	if l.observe != nil {
		e = Event{Kind: Queued, Key: keyOf(rs, ds, d), Decision: d}
		start = l.clock.Now() // before the event: an observer may move a test's clock
		l.observe(ctx, e)
	}
	slept := l.clock.SleepUntil(ctx, turn)
	if slept != nil {
		l.giveBack(ctx, rs, ds, used, d, turn.Sub(l.clock.Now()))
		err = fmt.Errorf("sluice: queued request given up: %w", slept)
	}
	if l.observe != nil {
		e.Kind, e.Waited = Waited, l.clock.Now().Sub(start)
		if slept != nil {
			e.Kind, e.Err = Shed, slept
		}
		l.observe(ctx, e)
	}
	return d, err
}

// keyOf returns the key of the layer of rs whose decision d is.
func keyOf(rs []Request, ds []Decision, d Decision) string {
	for i := range rs {
		if ds[i] == d {
			return rs[i].Key
		}
	}
	return rs[0].Key
}

// giveBack returns the units a granted rs took on store (under their shares
// when it is the fallback), for a queued request that will not be served,
// whose turn (d's, the latest of its layers', ds) comes in in. A
// LeakyQueue layer's turn goes back where it stands in its queue
// (Store.ReturnTurn): a gap the next request fills, rather than a queue
// shorter at its end.
func (l *Limiter) giveBack(ctx context.Context, rs []Request, ds []Decision, store Store, d Decision, in time.Duration) {
	ctx = context.WithoutCancel(ctx)
	var errs []error
	for i, r := range rs {
		q := Request{Key: r.Key, Policy: r.Policy, Cost: r.Cost}
		if store == l.fallback {
			p, err := l.shareOf(r.Policy)
			if err != nil {
				errs = append(errs, err) // cannot happen: the fallback decided under it
				continue
			}
			q.Policy = p
		}
		var err error
		if r.Policy.Algorithm() == LeakyQueue {
			_, err = store.ReturnTurn(ctx, q, in-d.Delay+ds[i].Delay)
		} else {
			q.Cost = -q.Cost
			_, err = store.Adjust(ctx, q)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 && l.observe != nil {
		l.report(ctx, rs[0].Key, d, asStoreError("adjust", errors.Join(errs...)), 0)
	}
}

// takeAll decides rs, reports the decision to the observer and returns it
// with the store that took the units (nil if none did). With turn, for
// TakeTurn, a grant with a Delay sets *turn to the time it may be served; if
// ctx's deadline comes first, it gives its units back and is reported, and
// returned, as a denial.
func (l *Limiter) takeAll(ctx context.Context, rs []Request, ds []Decision, turn *time.Time) (Decision, Store, error) {
	if len(rs) == 0 {
		return Decision{}, nil, errors.New("sluice: no requests")
	}
	if err := checkRequests(rs, ds); err != nil {
		return Decision{}, nil, err
	}
	if ds == nil {
		ds = make([]Decision, len(rs))
	}
	var start time.Duration
	if l.observe != nil {
		start = l.elapsed()
	}
	used, op := l.store, "take-all"
	var err error
	if turn != nil && len(rs) == 1 {
		// TakeTurn on one request: the store's Take decides it as TakeAll
		// would, on the memory store's faster path.
		op = "take"
		ds[0], err = l.store.Take(ctx, rs[0])
	} else {
		err = l.store.TakeAll(ctx, rs, ds)
	}
	if err != nil {
		err, used = asStoreError(op, err), nil
		if l.fallback != nil {
			if ferr := l.fallbackTakeAll(ctx, rs, ds); ferr != nil {
				err = errors.Join(err, ferr)
			} else {
				used = l.fallback
			}
		}
		for i, r := range rs {
			if used == nil {
				ds[i] = l.failed(r.Policy)
			}
			ds[i].Degraded = true
		}
	}
	best := 0
	for i := range rs[1:] {
		if ds[i+1].MoreRestrictive(ds[best]) {
			best = i + 1
		}
	}
	d := ds[best]
	if turn != nil && d.Allowed && d.Delay > 0 && used != nil {
		*turn = l.clock.Now().Add(d.Delay)
		if deadline, ok := ctx.Deadline(); ok && !turn.Before(deadline) {
			l.giveBack(ctx, rs, ds, used, d, d.Delay)
			d.Allowed, d.RetryAfter, d.Delay = false, d.Delay, 0
			used = nil
		}
	}
	if l.observe != nil {
		l.report(ctx, rs[best].Key, d, err, l.elapsed()-start)
	}
	return d, used, nil
}

// degrade applies the failure policy to a request the store could not
// decide: the fallback's decision, or the failure mode's if the fallback
// failed too. The error is what the observer is told.
func (l *Limiter) degrade(ctx context.Context, r Request, cause error) (Decision, error) {
	err := asStoreError("take", cause)
	if l.fallback == nil {
		return l.failed(r.Policy), err
	}
	share, ferr := l.shareOf(r.Policy)
	if ferr == nil {
		var d Decision
		if d, ferr = l.fallback.Take(ctx, Request{Key: r.Key, Policy: share, Cost: r.Cost}); ferr == nil {
			d.Policy, d.Degraded = r.Policy, true
			return d, err
		}
	}
	return l.failed(r.Policy), errors.Join(err, fallbackError(ferr))
}

// fallbackTakeAll decides rs on the fallback store, under the shares of
// their policies.
func (l *Limiter) fallbackTakeAll(ctx context.Context, rs []Request, ds []Decision) error {
	shared := rs
	if l.share > 1 {
		shared = make([]Request, len(rs))
		for i, r := range rs {
			p, err := l.shareOf(r.Policy)
			if err != nil {
				return fallbackError(err)
			}
			shared[i] = Request{Key: r.Key, Policy: p, Cost: r.Cost}
		}
	}
	if err := l.fallback.TakeAll(ctx, shared, ds); err != nil {
		return fallbackError(err)
	}
	for i, r := range rs {
		ds[i].Policy = r.Policy
	}
	return nil
}

func fallbackError(err error) error { return &StoreError{Op: "fallback", Err: err} }

// shareOf returns the policy the fallback applies for p: its share, cached
// for the few policies a program has.
func (l *Limiter) shareOf(p *Policy) (*Policy, error) {
	if l.share == 1 {
		return p, nil
	}
	if v, ok := l.shares.Load(p); ok {
		return v.(*Policy), nil
	}
	q, err := p.Share(l.share)
	if err != nil {
		return nil, err
	}
	if l.nShares.Load() < maxCachedShares {
		if _, loaded := l.shares.LoadOrStore(p, q); !loaded {
			l.nShares.Add(1)
		}
	}
	return q, nil
}

// maxCachedShares bounds the share cache: a program that makes policies on
// the fly makes their shares on the fly too, past it.
const maxCachedShares = 4096

// asStoreError wraps err in a *StoreError unless the store already did.
func asStoreError(op string, err error) error {
	var se *StoreError
	if errors.As(err, &se) {
		return err
	}
	return &StoreError{Op: op, Err: err}
}

// failed is the decision of the failure mode, with no store to go by.
func (l *Limiter) failed(p *Policy) Decision {
	if l.failClosed {
		return Decision{Policy: p, Degraded: true, RetryAfter: l.failRetry}
	}
	return Decision{Policy: p, Degraded: true, Allowed: true}
}

func (l *Limiter) report(ctx context.Context, key string, d Decision, err error, latency time.Duration) {
	e := Event{Key: key, Decision: d, Err: err, Latency: latency}
	switch {
	case err != nil:
		e.Kind = StoreFailed
	case !d.Allowed:
		e.Kind = Denied
	case float64(d.Remaining) <= l.nearLimit*float64(d.Limit):
		e.Kind = NearLimit
	default:
		e.Kind = Allowed
	}
	l.observe(ctx, e)
}

// Observer returns the Limiter's observer, nil if it has none.
func (l *Limiter) Observer() Observer { return l.observe }

// Observe makes o the Limiter's observer, and hands it to its store if the
// store is Observable, unless the Limiter was built with one (WithObserver):
// a part built without an observer inherits the one an application gives
// once, to admit.Config.Observer. Call it before the Limiter decides
// anything.
func (l *Limiter) Observe(o Observer) {
	if l.observe != nil || o == nil {
		return
	}
	l.observe = o
	if s, ok := l.store.(Observable); ok {
		s.Observe(o)
	}
}
