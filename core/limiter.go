package core

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Limiter puts a Store to work: it decides requests, applies the chosen
// behaviour when the store fails, reports every decision to an observer, and
// hands out reservations for costs known only afterwards. It is safe for
// concurrent use.
type Limiter struct {
	store     Store
	mode      FailureMode
	fallback  Store
	observe   Observer
	nearLimit float64
	failRetry time.Duration
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

// Event describes one decision to an Observer.
type Event struct {
	Outcome Outcome
	// Key and Decision are those of the reported (most restrictive) request.
	Key      string
	Decision Decision
	// Err is the store's error when Outcome is StoreFailed, and is also set
	// when a fallback store decided instead.
	Err error
	// Latency is the time the store took to answer.
	Latency time.Duration
}

// Outcome classifies an Event.
type Outcome uint8

// Outcomes.
const (
	Allowed     Outcome = iota // granted with room to spare
	NearLimit                  // granted, with Remaining at or under the near-limit share of Limit
	Denied                     // refused by a policy
	StoreFailed                // the store failed; Decision is the failure policy's (or fallback's)
)

var outcomeNames = [...]string{"allowed", "near-limit", "denied", "store-failed"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", o)
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
// than no limit at all. It takes precedence over the failure mode.
func WithFallback(s Store) Option {
	return func(l *Limiter) error {
		if s == nil {
			return errors.New("sluice: nil fallback store")
		}
		l.fallback = s
		return nil
	}
}

// WithObserver reports every decision to o.
func WithObserver(o Observer) Option {
	return func(l *Limiter) error { l.observe = o; return nil }
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

// NewLimiter returns a Limiter deciding on store.
func NewLimiter(store Store, opts ...Option) (*Limiter, error) {
	if store == nil {
		return nil, errors.New("sluice: nil store")
	}
	l := &Limiter{store: store, nearLimit: 0.1, failRetry: time.Second}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Take decides one request. The error is non-nil only for a malformed
// request (nil policy, cost below 1); a store failure is not an error here
// but a Degraded decision following the failure mode.
func (l *Limiter) Take(ctx context.Context, key string, p *Policy, cost int64) (Decision, error) {
	r := Request{Key: key, Policy: p, Cost: cost}
	if err := CheckRequest(r); err != nil {
		return Decision{}, err
	}
	var start time.Time
	if l.observe != nil {
		start = time.Now()
	}
	d, err := l.store.Take(ctx, r)
	if err != nil {
		d, err = l.degrade(ctx, r, err)
	}
	if l.observe != nil {
		l.report(ctx, key, d, err, time.Since(start))
	}
	return d, nil
}

// TakeAll decides several requests as one (see Store.TakeAll), writes each
// one's decision to ds and returns the one to report: the most restrictive.
// A request denied by any policy takes nothing from the others.
func (l *Limiter) TakeAll(ctx context.Context, rs []Request, ds []Decision) (Decision, error) {
	d, _, err := l.takeAll(ctx, rs, ds)
	return d, err
}

func (l *Limiter) takeAll(ctx context.Context, rs []Request, ds []Decision) (Decision, Store, error) {
	if len(rs) == 0 {
		return Decision{}, nil, errors.New("sluice: no requests")
	}
	if err := CheckRequests(rs, ds); err != nil {
		return Decision{}, nil, err
	}
	var start time.Time
	if l.observe != nil {
		start = time.Now()
	}
	used := l.store
	err := l.store.TakeAll(ctx, rs, ds)
	if err != nil {
		used = l.fallback
		if l.fallback == nil || l.fallback.TakeAll(ctx, rs, ds) != nil {
			used = nil
			for i, r := range rs {
				ds[i] = l.failed(r.Policy)
			}
		}
	}
	best := 0
	for i := range rs[1:] {
		if ds[i+1].MoreRestrictive(ds[best]) {
			best = i + 1
		}
	}
	if err != nil {
		for i := range rs {
			ds[i].Degraded = true
		}
		err = asStoreError("take-all", err)
	}
	if l.observe != nil {
		l.report(ctx, rs[best].Key, ds[best], err, time.Since(start))
	}
	return ds[best], used, nil
}

// degrade applies the failure policy to a request the store could not decide.
func (l *Limiter) degrade(ctx context.Context, r Request, cause error) (Decision, error) {
	err := asStoreError("take", cause)
	if l.fallback != nil {
		if d, ferr := l.fallback.Take(ctx, r); ferr == nil {
			d.Degraded = true
			return d, err
		}
	}
	return l.failed(r.Policy), err
}

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
		e.Outcome = StoreFailed
	case !d.Allowed:
		e.Outcome = Denied
	case float64(d.Remaining) <= l.nearLimit*float64(d.Limit):
		e.Outcome = NearLimit
	default:
		e.Outcome = Allowed
	}
	l.observe(ctx, e)
}

// Reserve takes an estimated cost now for work whose actual cost is known
// only afterwards (tokens generated, bytes sent): each request's Cost is the
// estimate. If the reservation is granted, call Reconcile with the actual
// cost when it is known, or Cancel if the work did not happen.
func (l *Limiter) Reserve(ctx context.Context, rs ...Request) (*Reservation, error) {
	res := &Reservation{l: l, reqs: append([]Request(nil), rs...)}
	ds := make([]Decision, len(rs))
	d, used, err := l.takeAll(ctx, res.reqs, ds)
	if err != nil {
		return nil, err
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
// assumes one actual cost applies to every layer of the reservation.
// A denied or already settled reservation reconciles to nothing (the latter
// with ErrSettled).
func (r *Reservation) Reconcile(ctx context.Context, actual int64) error {
	if r.settled {
		if r.store == nil || !r.Decision.Allowed {
			return nil
		}
		return ErrSettled
	}
	if actual < 0 {
		return fmt.Errorf("sluice: actual cost must not be negative, got %d", actual)
	}
	r.settled = true
	var errs []error
	for _, q := range r.reqs {
		if delta := actual - q.Cost; delta != 0 {
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
