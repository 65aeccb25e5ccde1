package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Breaker is a circuit breaker. Closed, it counts outcomes and trips on
// BreakerConfig's consecutive failures or failure rate; open, it fails calls
// at once with a [*CircuitOpenError] for OpenTimeout (or until a Retry-After,
// [BreakerPermit.FailUntil]); half-open, it lets HalfOpenProbes calls through
// and closes when all succeed.
//
// Use it around any call with [Breaker.Execute] or [CallThrough], around an
// HTTP transport with [NewBreakerTransport], or by hand with [Breaker.Allow].
// A Breaker is safe for concurrent use.
type Breaker struct {
	cfg BreakerConfig

	mu          sync.Mutex
	state       BreakerState
	gen         uint64 // bumped on every state change; stale permits are ignored
	consecutive int
	window      rollingWindow
	openUntil   time.Time
	probes      int // half-open probes admitted
	probesOK    int // half-open probes that succeeded
}

// BreakerState is a breaker state.
type BreakerState int32

// Breaker states.
const (
	BreakerClosed BreakerState = iota
	BreakerOpen
	BreakerHalfOpen
)

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("BreakerState(%d)", int32(s))
}

// ErrCircuitOpen is matched (with errors.Is) by every [*CircuitOpenError].
var ErrCircuitOpen = errors.New("client: circuit breaker is open")

// CircuitOpenError is returned, without making the call, while a breaker is
// open or while all half-open probes are out.
type CircuitOpenError struct {
	// Name is the breaker's name (the host, in the transport layer).
	Name string
	// State is BreakerOpen, or BreakerHalfOpen when all probes are in
	// flight.
	State BreakerState
	// RetryAt is when an open breaker lets a probe through; zero in
	// half-open.
	RetryAt time.Time
}

// Error describes the rejection.
func (e *CircuitOpenError) Error() string {
	if e.State == BreakerHalfOpen {
		return fmt.Sprintf("client: circuit breaker %q is half-open and all probes are in flight", e.Name)
	}
	return fmt.Sprintf("client: circuit breaker %q is open until %s", e.Name, e.RetryAt.Format(time.RFC3339Nano))
}

// Unwrap returns [ErrCircuitOpen].
func (e *CircuitOpenError) Unwrap() error { return ErrCircuitOpen }

// NewBreaker returns a closed breaker, or an error wrapping
// [ErrInvalidConfig] when a field of cfg is out of range.
func NewBreaker(cfg BreakerConfig) (*Breaker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return newBreaker(cfg.withDefaults()), nil
}

// newBreaker builds a breaker from a validated config with defaults.
func newBreaker(cfg BreakerConfig) *Breaker {
	b := &Breaker{cfg: cfg}
	b.window.init(cfg.Window, cfg.Buckets, cfg.Clock.Now())
	return b
}

// Execute runs fn if the breaker admits the call and records its outcome
// (see BreakerConfig.Classify). It returns fn's error, a [*CircuitOpenError]
// without calling fn, or ctx.Err() if ctx is already done. A panic in fn
// counts as a failure and is propagated.
func (b *Breaker) Execute(ctx context.Context, fn func(context.Context) error) error {
	_, err := CallThrough(ctx, b, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx)
	})
	return err
}

// CallThrough calls fn through the breaker b, as [Breaker.Execute] does, and
// returns its value: Execute for functions that return one.
func CallThrough[T any](ctx context.Context, b *Breaker, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	p, err := b.Allow()
	if err != nil {
		return zero, err
	}
	finished := false
	defer func() {
		if !finished { // fn panicked
			p.Done(core.Failed)
		}
	}()
	v, err := fn(ctx)
	finished = true
	p.Done(b.cfg.Classify(err))
	return v, err
}

// BreakerPermit is a call admitted by [Breaker.Allow]. Report its outcome
// exactly once with Done or FailUntil. The zero BreakerPermit ignores
// reports.
type BreakerPermit struct {
	b     *Breaker
	gen   uint64
	probe bool
}

// Done records the outcome of the call.
func (p BreakerPermit) Done(o core.Outcome) {
	if p.b != nil {
		p.b.record(p, o, time.Time{})
	}
}

// FailUntil records a failure whose answer said when to come back (a 503
// with Retry-After): if the breaker opens, or is open, it stays open at
// least until t (capped by MaxHold).
func (p BreakerPermit) FailUntil(t time.Time) {
	if p.b != nil {
		p.b.record(p, core.Failed, t)
	}
}

// Allow asks to make a call. It returns a [BreakerPermit] to report the
// outcome to, or a [*CircuitOpenError] when the call must not be made.
func (b *Breaker) Allow() (p BreakerPermit, err error) {
	b.update(func(time.Time, *transitions) {
		switch b.state {
		case BreakerClosed:
			p = BreakerPermit{b: b, gen: b.gen}
		case BreakerHalfOpen:
			if b.probes < b.cfg.HalfOpenProbes {
				b.probes++
				p = BreakerPermit{b: b, gen: b.gen, probe: true}
			} else {
				err = &CircuitOpenError{Name: b.cfg.Name, State: BreakerHalfOpen}
			}
		default:
			err = &CircuitOpenError{Name: b.cfg.Name, State: BreakerOpen, RetryAt: b.openUntil}
		}
	})
	return p, err
}

// State returns the current state.
func (b *Breaker) State() (s BreakerState) {
	b.update(func(time.Time, *transitions) { s = b.state })
	return s
}

// peek returns the state without advancing it or running hooks, for callers
// that hold other locks.
func (b *Breaker) peek() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// retryAt returns when an open breaker will half-open, or the zero time
// when it is not open.
func (b *Breaker) retryAt() (t time.Time) {
	b.update(func(time.Time, *transitions) {
		if b.state == BreakerOpen {
			t = b.openUntil
		}
	})
	return t
}

// update runs fn under the lock, with the state first brought up to date
// (an open breaker whose time is up half-opens), then reports the state
// changes to the hook once the lock is released.
func (b *Breaker) update(fn func(now time.Time, tr *transitions)) {
	now := b.cfg.Clock.Now()
	var tr transitions
	b.mu.Lock()
	b.advance(now, &tr)
	fn(now, &tr)
	b.mu.Unlock()
	b.notify(tr)
}

func (b *Breaker) record(p BreakerPermit, o core.Outcome, until time.Time) {
	b.update(func(now time.Time, tr *transitions) {
		switch {
		case p.gen != b.gen:
			// Admitted under an earlier state: the result says nothing about
			// the current one. A server's "come back at" still extends an
			// open period.
			if b.state == BreakerOpen && o == core.Failed && !until.IsZero() {
				b.openUntil = laterOf(b.openUntil, b.holdUntil(now, until))
			}
		case b.state == BreakerClosed:
			if o == core.Ignored {
				break
			}
			b.window.add(now, o == core.Failed)
			if o == core.Succeeded {
				b.consecutive = 0
				break
			}
			b.consecutive++
			if b.shouldTrip(now) {
				b.open(now, until, tr)
			}
		case b.state == BreakerHalfOpen && p.probe:
			switch o {
			case core.Ignored:
				b.probes--
			case core.Succeeded:
				if b.probesOK++; b.probesOK >= b.cfg.HalfOpenProbes {
					b.set(BreakerClosed, tr)
				}
			case core.Failed:
				b.open(now, until, tr)
			}
		}
	})
}

func (b *Breaker) shouldTrip(now time.Time) bool {
	if n := b.cfg.ConsecutiveFailures; n > 0 && b.consecutive >= n {
		return true
	}
	if r := b.cfg.FailureRate; r > 0 {
		calls, fails := b.window.totals(now)
		return calls >= int64(b.cfg.MinCalls) && float64(fails) >= r*float64(calls)
	}
	return false
}

// advance moves an open breaker whose time is up to half-open.
func (b *Breaker) advance(now time.Time, tr *transitions) {
	if b.state == BreakerOpen && !now.Before(b.openUntil) {
		b.set(BreakerHalfOpen, tr)
	}
}

func (b *Breaker) open(now, until time.Time, tr *transitions) {
	b.set(BreakerOpen, tr)
	b.openUntil = now.Add(b.cfg.OpenTimeout)
	if !until.IsZero() {
		b.openUntil = laterOf(b.openUntil, b.holdUntil(now, until))
	}
}

func (b *Breaker) holdUntil(now, until time.Time) time.Time {
	if limit := now.Add(b.cfg.OpenTimeout + b.cfg.MaxHold); until.After(limit) {
		return limit
	}
	return until
}

// set changes state and starts the new state with clean counters.
func (b *Breaker) set(s BreakerState, tr *transitions) {
	tr.add(b.state, s)
	b.state = s
	b.gen++
	b.consecutive = 0
	b.probes, b.probesOK = 0, 0
	b.window.reset()
}

func (b *Breaker) notify(tr transitions) {
	if b.cfg.OnStateChange == nil {
		return
	}
	for _, t := range tr.list[:tr.n] {
		b.cfg.OnStateChange(b.cfg.Name, t.from, t.to)
	}
}

// transitions collects the state changes made under the lock, so that the
// hook runs after it is released (a hook may well call State).
type transitions struct {
	n    int
	list [2]struct{ from, to BreakerState }
}

func (t *transitions) add(from, to BreakerState) {
	if t.n < len(t.list) {
		t.list[t.n].from, t.list[t.n].to = from, to
		t.n++
	}
}

func defaultClassify(err error) core.Outcome {
	switch {
	case err == nil:
		return core.Succeeded
	case errors.Is(err, context.Canceled):
		return core.Ignored
	}
	return core.Failed
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
