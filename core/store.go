package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Store keeps per-key state and applies policies to it atomically. Memory
// does each step under a lock, Redis in one Lua script. Implementations must
// be safe for concurrent use and must pass the suite in store/storetest.
//
// A Store keys state by the pair (policy, key): the same key under two
// policies is two independent states.
type Store interface {
	// Take takes r.Cost units from r.Key under r.Policy and reports the
	// decision. r.Cost must be at least 1 (ErrInvalidCost otherwise); a cost
	// above the policy's Burst is denied as Impossible, never an error.
	Take(ctx context.Context, r Request) (Decision, error)

	// TakeAll decides several requests as one: either every one is granted
	// and taken, or none takes anything. It writes the decision for rs[i]
	// to ds[i] (len(ds) must be at least len(rs)). On a denial each ds[i]
	// that would have passed on its own reports its key's standing without
	// the request, with Allowed true; the denying ones say why.
	TakeAll(ctx context.Context, rs []Request, ds []Decision) error

	// Adjust gives back (r.Cost < 0) or charges (r.Cost > 0) units without
	// a decision, as a reservation's reconciliation needs. A charge may put
	// the key in debt. It returns the standing afterwards.
	Adjust(ctx context.Context, r Request) (Decision, error)

	// Reset forgets the state of key under p: it is full again.
	Reset(ctx context.Context, key string, p *Policy) error
}

// Request asks for Cost units from Key under Policy.
type Request struct {
	Key    string
	Policy *Policy
	Cost   int64
}

// Errors a Store or Limiter returns. Store failures (Redis down, a deadline
// passed) are wrapped in *StoreError.
var (
	ErrInvalidCost    = errors.New("sluice: cost must be at least 1")
	ErrNoPolicy       = errors.New("sluice: request has no policy")
	ErrTooManyResults = errors.New("sluice: fewer decisions than requests")
)

// CheckRequest returns the error a store must give for a malformed request,
// or nil. Stores call it first so every store rejects the same inputs.
func CheckRequest(r Request) error {
	if r.Policy == nil {
		return ErrNoPolicy
	}
	if r.Cost < 1 {
		return fmt.Errorf("%w: got %d for key %q under %q", ErrInvalidCost, r.Cost, r.Key, r.Policy.name)
	}
	return nil
}

// CheckRequests is CheckRequest for TakeAll's arguments.
func CheckRequests(rs []Request, ds []Decision) error {
	if len(ds) < len(rs) {
		return ErrTooManyResults
	}
	for _, r := range rs {
		if err := CheckRequest(r); err != nil {
			return err
		}
	}
	return nil
}

// StoreError reports that a store could not decide: it is down, slow past its
// deadline, or answered something unreadable. A Limiter turns it into its
// failure policy; adapters answer 503 when the policy is to fail closed.
type StoreError struct {
	Op  string // "take", "take-all", "adjust" or "reset"
	Err error
}

func (e *StoreError) Error() string { return "sluice: store " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *StoreError) Unwrap() error { return e.Err }

// Clock tells the time. Stores and limiters take one so tests can move time
// by hand; production code uses SystemClock.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that moves only when told to. It is safe for
// concurrent use. The zero value reads the Unix epoch; NewManualClock starts
// elsewhere.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a ManualClock reading t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward if d is negative).
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}
