package core

import (
	"context"
	"fmt"
	"time"
)

// Store keeps per-key state and applies policies to it atomically: memory
// does each step under a lock, Redis in one Lua script. The same key under
// two policies is two independent states. Implementations must be safe for
// concurrent use and pass the conformance suite in store/storetest; package
// storekit holds the algorithms' arithmetic a store applies.
type Store interface {
	// Take takes r.Cost units from r.Key under r.Policy and reports the
	// decision. r.Cost must be 1 to storekit.MaxCost (a *RequestError otherwise, see
	// storekit.CheckRequest); a cost above the policy's Burst is denied as
	// Impossible, never an error.
	Take(ctx context.Context, r Request) (Decision, error)

	// TakeAll decides several requests as one: either every one is granted
	// and taken, or none takes anything. It writes the decision for rs[i]
	// to ds[i] (len(ds) must be at least len(rs)). On a denial each ds[i]
	// that would have passed on its own reports its key's standing without
	// the request, with Allowed true; the denying ones say why.
	TakeAll(ctx context.Context, rs []Request, ds []Decision) error

	// Adjust gives back (r.Cost < 0) or charges (r.Cost > 0) units without
	// a decision, as a reservation's reconciliation needs: at most storekit.MaxCost
	// either way (see storekit.CheckAdjust); a charge may put the key in
	// debt, up to the bound storekit.Adjust states. It returns the standing
	// afterwards.
	Adjust(ctx context.Context, r Request) (Decision, error)

	// ReturnTurn gives back the r.Cost units of a LeakyQueue grant that will
	// not be served, whose turn comes in in: the turn becomes a gap the next
	// request fills, released at that very instant (storekit.ReturnTurn),
	// where Adjust would shorten the queue from its end. Under any other
	// algorithm it is Adjust with -r.Cost. It returns the standing afterwards.
	ReturnTurn(ctx context.Context, r Request, in time.Duration) (Decision, error)

	// Reset forgets the state of key under p: it is full again.
	Reset(ctx context.Context, key string, p *Policy) error
}

// Request asks for Cost units from Key under Policy. Key may share its
// memory with other strings (an HTTP adapter carves keys from slabs, or
// takes a part of the peer's address): a store that keeps a key past the
// call keeps a copy (strings.Clone), so that it holds no more than the key.
type Request struct {
	Key    string
	Policy *Policy
	Cost   int64
}

// maxCost is the most units one request may cost, and the largest size of an
// adjustment or of a reservation's actual cost: 2^40. It keeps every sum a
// store computes far from overflow, and exact in the Redis store's Lua
// numbers (doubles, exact below 2^53). A cost above the policy's Burst but
// within maxCost is a valid request, denied as Impossible.
const maxCost = 1 << 40

// RequestError reports a malformed request, before any store is asked:
// a cost, estimate, actual cost or adjustment out of range, a request
// without a policy, or fewer decisions than requests. Every store rejects
// the same requests with it, before touching any state.
type RequestError struct {
	// Field names what is wrong: "cost" (Take, TakeAll), "estimate"
	// (Reserve), "actual" (Reconcile), "delta" (Adjust), "policy" (a nil
	// Policy) or "decisions" (ds shorter than rs).
	Field  string
	Value  int64
	Key    string
	Policy string // the policy's name
}

func (e *RequestError) Error() string {
	switch e.Field {
	case "policy":
		return fmt.Sprintf("sluice: request for key %q has no policy", e.Key)
	case "decisions":
		return fmt.Sprintf("sluice: fewer decisions than requests (%d)", e.Value)
	}
	want := "1 to maxCost (%d)"
	switch e.Field {
	case "actual":
		want = "0 to maxCost (%d)"
	case "delta":
		want = "-maxCost to maxCost (%d)"
	}
	return fmt.Sprintf("sluice: %s %d for key %q under %q: must be "+want, e.Field, e.Value, e.Key, e.Policy, int64(maxCost))
}

// checkRequests checks TakeAll's arguments as every store must (see
// storekit.CheckRequests), so a malformed request is an error before any
// store, primary or fallback, is asked. A nil ds is let through: the
// Limiter's entry points take one.
func checkRequests(rs []Request, ds []Decision) error {
	if ds != nil && len(ds) < len(rs) {
		return &RequestError{Field: "decisions", Value: int64(len(rs))}
	}
	for _, r := range rs {
		if err := checkCost(r, "cost", 1); err != nil {
			return err
		}
	}
	return nil
}

// checkCost checks that r has a policy and a Cost, named field, in [lo, maxCost].
func checkCost(r Request, field string, lo int64) error {
	if r.Policy == nil {
		return &RequestError{Field: "policy", Key: r.Key}
	}
	if r.Cost < lo || r.Cost > maxCost {
		return &RequestError{Field: field, Value: r.Cost, Key: r.Key, Policy: r.Policy.name}
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
