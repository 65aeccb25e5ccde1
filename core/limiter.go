package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Limiter puts a Store to work: it decides requests, applies the chosen
// behaviour when the store fails, reports every decision to an observer,
// hands out reservations for costs known only afterwards, and holds the
// requests a LeakyQueue policy queues until their turn (Wait). It is safe
// for concurrent use.
type Limiter struct {
	store     Store
	mode      FailureMode
	fallback  Store
	share     int      // each limit's share the fallback applies: 1/share
	shares    sync.Map // *Policy -> *Policy, its share
	nShares   atomic.Int64
	observe   Observer
	timed     bool      // events carry the store's latency
	epoch     time.Time // what latencies are read from: one clock read each
	nearLimit float64
	failRetry time.Duration
	clock     Clock // what Wait reads and waits on
}

// FailureMode is what a Limiter does when its store cannot decide.
type FailureMode uint8

const (
	// FailOpen admits the request and reports the failure. Decisions are
	// marked Degraded and carry no figures (Limit zero).
	FailOpen FailureMode = iota
	// FailClosed denies the request; adapters answer 503 Service
	// Unavailable with Retry-After rather than 429, since the client did
	// nothing wrong.
	FailClosed
)

// Observer sees every decision a Limiter makes. It runs on the request's
// goroutine, so it must be quick; it must not retain ctx.
type Observer func(ctx context.Context, e Event)

// Event describes one decision to an Observer, work a store does on its own
// (the lease outcomes), or a request's wait in a queue: a LeakyQueue
// policy's (Limiter.TakeTurn) or a concurrency limit's (package backpressure,
// whose events backpressure.Config.Observer hands to an Observer), so that one
// Observer sees rate limits and concurrency limits alike.
type Event struct {
	Kind Kind
	// Key and Decision are those of the reported (most restrictive) request;
	// for the lease outcomes, Decision.Policy names the leased policy. A
	// concurrency limit's outcomes have no Decision.Policy: LimitName names
	// the limit instead.
	Key      string
	Decision Decision
	// Err is the store's error when Kind is StoreFailed: a fallback
	// store decided instead, or the failure mode did. If the fallback failed
	// too, Err joins both errors. For Shed, it says why the request
	// was not served: the *backpressure.ShedError its caller was answered
	// with, or the request context's error when the caller gave up waiting.
	Err error
	// Latency is the time the store took to answer, zero under
	// WithoutLatency; for Waited and Shed, the time the
	// request waited in the queue.
	Latency time.Duration
	// Units is the number of units a lease outcome took or gave back; for
	// LimitChanged, the new limit.
	Units int64
	// LimitName and Class are set on a concurrency limit's outcomes: the
	// name it reports under (backpressure.Config.Name's), which metrics and
	// logs show where a rate limit's policy name goes, and the request's
	// class ("critical", "default" or "sheddable"; empty for
	// LimitChanged).
	LimitName, Class string
}

// Kind classifies an Event.
type Kind uint8

// Outcomes.
const (
	Allowed     Kind = iota // granted with room to spare
	NearLimit               // granted, with Remaining at or under the near-limit share of Limit
	Denied                  // refused by a policy
	StoreFailed             // the store failed; Decision is the failure policy's (or fallback's)

	// Work a store does beyond a decision, reported by stores that keep
	// local budgets (see Observable): Key and Units say what, Decision is
	// the shared store's answer when there is one.
	LeaseTaken    // units leased from the shared state, to be spent locally
	LeaseReturned // unspent units given back
	LeaseFailed   // leasing or giving back failed (Err); the units held stay held

	// A request's wait in a queue, reported by Limiter.TakeTurn for a
	// LeakyQueue policy's turn (Key and Decision are the request's) and by
	// a concurrency limit for a slot (LimitName and Class say which, see
	// backpressure.Config.Observer).
	Queued       // the request waits: for its turn (Decision.Delay), or for a slot
	Waited       // the request's wait is over, after Latency: it is served
	Shed         // the request is not served, at once or after waiting Latency (Err says why)
	LimitChanged // a concurrency limit moved to Units
)

var kindNames = [...]string{"allowed", "near-limit", "denied", "store-failed", "lease-taken", "lease-returned", "lease-failed",
	"queued", "waited", "shed", "limit-changed"}

// Observable is implemented by stores that do work of their own worth
// observing (leasing local budgets): a Limiter built with an Observer hands
// it to its store, which reports to every observer handed to it.
type Observable interface {
	Observe(Observer)
}

func (o Kind) String() string {
	if int(o) < len(kindNames) {
		return kindNames[o]
	}
	return fmt.Sprintf("Kind(%d)", o)
}

// Option configures a Limiter.
type Option func(*Limiter) error

// WithFailureMode sets what happens when the store fails (default FailOpen).
func WithFailureMode(m FailureMode) Option {
	return func(l *Limiter) error {
		if m != FailOpen && m != FailClosed {
			return fmt.Errorf("sluice: unknown failure mode %d", m)
		}
		l.mode = m
		return nil
	}
}

// WithFallback decides on s (typically an in-memory store) when the primary
// store fails: a local, per-instance approximation of the shared limit rather
// than no limit at all. It takes precedence over the failure mode, which
// applies only when the fallback fails too. See WithFallbackShare for what
// the fallback allows.
func WithFallback(s Store) Option {
	return func(l *Limiter) error {
		if s == nil {
			return errors.New("sluice: nil fallback store")
		}
		l.fallback = s
		return nil
	}
}

// WithFallbackShare has the fallback store apply one nth of every limit
// (Policy.Share), for a fleet of n instances sharing one store: while the
// store is down, the n fallbacks together then admit about what one limit
// admits, instead of n whole limits. The default, 1, suits a single instance.
//
// The bound, per key and policy, for an outage of length T: the fleet admits
// at most n×(Burst/n + 1) + Rate×T units (Burst/n rounded down, at least 1)
// for the bucket family, and n×max(Quota/n, 1) per window for the window
// family, on top of what the shared store admitted before it failed. A
// fallback keeps its state between outages, so a second outage soon after
// the first starts where the first left off. A request whose store call
// failed is always taken from the fallback, even if the shared store may
// have taken it too (a call that timed out after reaching Redis): it counts
// against both, never against neither.
func WithFallbackShare(n int) Option {
	return func(l *Limiter) error {
		if n < 1 || n > MaxShares {
			return fmt.Errorf("sluice: fallback share must be 1 to %d, got %d", MaxShares, n)
		}
		l.share = n
		return nil
	}
}

// WithObserver reports every decision to o.
func WithObserver(o Observer) Option {
	return func(l *Limiter) error { l.observe = o; return nil }
}

// WithoutLatency reports events to the observer without the store's
// latency: Event.Latency is zero. Timing a store call takes two clock reads,
// which on virtual machines cost about as much as a whole decision of the
// memory store (a read of the monotonic clock, ~30 ns on kvm-clock); without
// them, an observed decision on the memory store reads the clock once, in the
// store, as an unobserved one does.
func WithoutLatency() Option {
	return func(l *Limiter) error { l.timed = false; return nil }
}

// WithNearLimit sets the share of Limit at or under which an allowed decision
// is reported as NearLimit (default 0.1).
func WithNearLimit(share float64) Option {
	return func(l *Limiter) error {
		if !(share >= 0 && share <= 1) {
			return fmt.Errorf("sluice: near-limit share must be in [0, 1], got %v", share)
		}
		l.nearLimit = share
		return nil
	}
}

// WithFailClosedRetryAfter sets the RetryAfter of FailClosed decisions
// (default 1s).
func WithFailClosedRetryAfter(d time.Duration) Option {
	return func(l *Limiter) error {
		if d < time.Second {
			return fmt.Errorf("sluice: fail-closed retry-after must be at least 1s, got %v", d)
		}
		l.failRetry = d
		return nil
	}
}

// WithClock sets the clock Wait holds queued requests on (default
// SystemClock): their turns are reckoned from its reading once the store
// has decided, and a context's deadline is compared with it. A clock with a
// method SleepUntil(ctx, t) error, as SystemClock and ManualClock have, is
// waited on; any other is read, and waited on with a real timer. Tests pass
// the ManualClock their store runs on, and move it to release waiters.
func WithClock(c Clock) Option {
	return func(l *Limiter) error {
		if c == nil {
			return errors.New("sluice: nil clock")
		}
		l.clock = c
		return nil
	}
}

// NewLimiter returns a Limiter deciding on store.
func NewLimiter(store Store, opts ...Option) (*Limiter, error) {
	if store == nil {
		return nil, errors.New("sluice: nil store")
	}
	l := &Limiter{store: store, share: 1, timed: true, epoch: time.Now(), nearLimit: 0.1, failRetry: time.Second, clock: SystemClock{}}
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

// Take decides one request. The error is non-nil only for a malformed
// request (nil policy, cost below 1); a store failure is not an error here
// but a Degraded decision following the failure mode.
func (l *Limiter) Take(ctx context.Context, key string, p *Policy, cost int64) (Decision, error) {
	r := Request{Key: key, Policy: p, Cost: cost}
	if p == nil || cost < 1 || cost > MaxCost {
		return Decision{}, checkCost(r, "cost", 1)
	}
	if l.observe != nil {
		return l.takeObserved(ctx, r), nil
	}
	// Each path returns its own value: a Decision is too large for
	// registers, and one variable for both would be copied once more.
	d, err := l.store.Take(ctx, r)
	if err == nil {
		return d, nil
	}
	d, _ = l.degrade(ctx, r, err)
	return d, nil
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
// one's decision to ds and returns the one to report: the most restrictive.
// A request denied by any policy takes nothing from the others.
func (l *Limiter) TakeAll(ctx context.Context, rs []Request, ds []Decision) (Decision, error) {
	d, _, err := l.takeAll(ctx, rs, ds, nil)
	return d, err
}

// Wait decides rs as one, as TakeAll does, and holds the caller until the
// request's turn has come: the one call a middleware makes for a request
// that may be queued by a LeakyQueue policy. The decision returned is
// TakeAll's, whose Delay is the longest turn of any layer, and the one to
// render. Without queued layers, or when the turn is now, Wait returns at
// once, exactly as TakeAll; a denial returns at once too.
//
// Waiting honours ctx, and a request that will not be served gives its turn
// back, on every layer that took units, so the next request gets it: where
// it stood in the queue, if the store implements TurnReturner (both of
// this module's do), so that the next request is released at that very
// instant, one Interval from the requests around it; otherwise with
// Adjust, which shortens the queue from its end:
//
//   - If ctx's deadline falls before the turn, the request does not wait
//     at all: its units go back at once and Wait reports a denial (Allowed
//     false, Delay zero), whose RetryAfter is the Delay it was offered:
//     the time after which the same request would pass without waiting,
//     if nothing else happened meanwhile. Deciding this up front spares the
//     client a wait that would end in failure anyway. The observer sees
//     the denial.
//   - If ctx is done while the request waits, its units go back and Wait
//     returns the decision with an error wrapping ctx.Err(): the request
//     must not be served.
//
// A nil error means: serve the request now if the decision is Allowed,
// answer it as denied otherwise. ds holds each layer's decision as the
// store made it. Giving units back uses a context without ctx's
// cancellation (the store's own timeouts bound it); if that fails, the
// observer sees a store failure and the units stay taken.
//
// Besides the decision, the observer sees the wait: Queued when the
// request starts waiting for its turn, then Waited once it has come,
// or Shed (Err: ctx's error) if ctx ends first, each with the
// decision's key and the time waited on the Limiter's clock as Latency.
func (l *Limiter) Wait(ctx context.Context, rs []Request, ds []Decision) (Decision, error) {
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
	var slept error
	if s, ok := l.clock.(sleeper); ok {
		slept = s.SleepUntil(ctx, turn)
	} else {
		slept = sleepFor(ctx, turn.Sub(l.clock.Now()))
	}
	if slept != nil {
		l.giveBack(ctx, rs, ds, used, d, turn.Sub(l.clock.Now()))
		err = fmt.Errorf("sluice: queued request given up: %w", slept)
	}
	if l.observe != nil {
		e.Kind, e.Latency = Waited, l.clock.Now().Sub(start)
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
// LeakyQueue layer's turn goes back where it stands in its queue, if the
// store can (TurnReturner): a gap the next request fills, rather than a
// queue shorter at its end.
func (l *Limiter) giveBack(ctx context.Context, rs []Request, ds []Decision, store Store, d Decision, in time.Duration) {
	ctx = context.WithoutCancel(ctx)
	turns, _ := store.(TurnReturner)
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
		if turns != nil && r.Policy.Algorithm() == LeakyQueue {
			_, err = turns.ReturnTurn(ctx, q, in-d.Delay+ds[i].Delay)
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
// Wait, a grant with a Delay sets *turn to the time it may be served; if
// ctx's deadline comes first, it gives its units back and is reported, and
// returned, as a denial.
func (l *Limiter) takeAll(ctx context.Context, rs []Request, ds []Decision, turn *time.Time) (Decision, Store, error) {
	if len(rs) == 0 {
		return Decision{}, nil, errors.New("sluice: no requests")
	}
	if err := checkRequests(rs, ds); err != nil {
		return Decision{}, nil, err
	}
	var start time.Duration
	if l.observe != nil {
		start = l.elapsed()
	}
	used, op := l.store, "take-all"
	var err error
	if turn != nil && len(rs) == 1 {
		// Wait on one request: the store's Take decides it as TakeAll
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
	if l.mode == FailClosed {
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

// Reserve takes an estimated cost now for work whose actual cost is known
// only afterwards (tokens generated, bytes sent): each request's Cost is the
// estimate. If the reservation is granted, call Reconcile with the actual
// cost when it is known, or Cancel if the work did not happen.
func (l *Limiter) Reserve(ctx context.Context, rs ...Request) (*Reservation, error) {
	for _, r := range rs {
		if err := checkCost(r, "estimate", 1); err != nil {
			return nil, err
		}
	}
	res := &Reservation{l: l, reqs: append([]Request(nil), rs...)}
	ds := make([]Decision, len(rs))
	d, used, err := l.takeAll(ctx, res.reqs, ds, nil)
	if err != nil {
		return nil, err
	}
	if used != nil && used == l.fallback {
		// Settled where taken: on the fallback, under the shares.
		for i := range res.reqs {
			if res.reqs[i].Policy, err = l.shareOf(res.reqs[i].Policy); err != nil {
				return nil, err // cannot happen: the fallback decided under it
			}
		}
	}
	res.Decision, res.store = d, used
	res.settled = !d.Allowed || used == nil
	return res, nil
}

// Reservation is units taken on an estimate, to be reconciled with the actual
// cost. It is not safe for concurrent use.
type Reservation struct {
	// Decision is the reservation's decision: if not Allowed, nothing was
	// taken and Reconcile does nothing.
	Decision Decision

	l       *Limiter
	store   Store // the store that took the units, nil if none did
	reqs    []Request
	settled bool
}

// ErrSettled is returned by Reconcile on a reservation already reconciled.
var ErrSettled = errors.New("sluice: reservation already settled")

// Reconcile settles the reservation at the actual cost: each request is
// refunded what its estimate exceeded actual by, or charged the difference
// (possibly into debt: the work is done, so the next requests pay). It
// assumes one actual cost applies to every layer of the reservation; see
// ReconcileEach for layers that learn costs of their own.
// A denied or already settled reservation reconciles to nothing (the latter
// with ErrSettled).
func (r *Reservation) Reconcile(ctx context.Context, actual int64) error {
	return r.settle(ctx, len(r.reqs), func(int) int64 { return actual })
}

// ReconcileEach is Reconcile with an actual cost per request, in the order
// Reserve was given them: actual[i] settles the i-th. A layered reservation
// whose layers end differently needs it: a limit on failed logins reserved
// together with a per-IP limit refunds its unit when the login succeeds,
// while the per-IP limit keeps its own. actual must hold one cost per
// request.
func (r *Reservation) ReconcileEach(ctx context.Context, actual []int64) error {
	return r.settle(ctx, len(actual), func(i int) int64 { return actual[i] })
}

// settle settles each request i at actual(i), given n actual costs.
func (r *Reservation) settle(ctx context.Context, n int, actual func(i int) int64) error {
	if r.settled {
		if r.store == nil || !r.Decision.Allowed {
			return nil
		}
		return ErrSettled
	}
	if n != len(r.reqs) {
		return fmt.Errorf("sluice: %d actual costs for a reservation of %d requests", n, len(r.reqs))
	}
	for i, q := range r.reqs {
		if a := actual(i); a < 0 || a > MaxCost {
			return &RequestError{Field: "actual", Value: a, Key: q.Key, Policy: q.Policy.name}
		}
	}
	r.settled = true
	var errs []error
	for i, q := range r.reqs {
		if delta := actual(i) - q.Cost; delta != 0 {
			q.Cost = delta
			if _, err := r.store.Adjust(ctx, q); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		err := asStoreError("adjust", errors.Join(errs...))
		if r.l.observe != nil {
			r.l.report(ctx, r.reqs[0].Key, r.Decision, err, 0)
		}
		return err
	}
	return nil
}

// Cancel gives the whole reservation back: Reconcile with an actual cost of 0.
func (r *Reservation) Cancel(ctx context.Context) error { return r.Reconcile(ctx, 0) }

// Store returns the limiter's primary store.
func (l *Limiter) Store() Store { return l.store }
