package core

import "time"

// Decision is the outcome of taking units from one key under one policy. It is
// a plain value: headers and responses are rendered from it alone.
type Decision struct {
	// Policy is the policy that decided.
	Policy *Policy
	// Allowed reports whether the units were granted.
	Allowed bool
	// Impossible reports a cost larger than the policy can ever grant at
	// once: its Burst, or for LeakyQueue, its Burst plus the units its queue
	// holds within MaxDelay. No amount of waiting will admit it, so
	// RetryAfter is zero and the caller must not retry the same request.
	Impossible bool
	// Degraded marks a decision made without the store, which failed: by a
	// fallback store (real figures, local to this instance) or by the
	// Limiter's failure mode (no figures: Limit is zero). A denial without
	// figures is the store's fault, not the client's: adapters answer 503.
	// A fallback store's denial is a real limit and gets a 429.
	Degraded bool
	// Limit is the most units the policy can grant at once (Policy.Burst).
	Limit int64
	// Remaining is the number of units that could be taken right now, after
	// this decision. Never negative.
	Remaining int64
	// ResetAfter is the time until the key is back to its full allowance:
	// the bucket refilled, the window over, the log emptied. Zero when full.
	ResetAfter time.Duration
	// RetryAfter is, on a denial, the earliest time after which the same
	// request would be granted if nothing else happened meanwhile. Zero when
	// allowed and when Impossible.
	RetryAfter time.Duration
	// Delay is, on a grant under a LeakyQueue policy, how long the caller
	// must hold the request before serving it: its turn. A caller of Take,
	// TakeAll or Reserve waits it out itself (TakeTurn does so), or gives
	// the turn back with Store.ReturnTurn; zero for denials, standings and
	// every other algorithm.
	Delay time.Duration
}

// MoreRestrictive reports whether d should be reported in place of other when
// several policies decide one request: a denial beats an allowance, a longer
// wait beats a shorter one, and among allowances a longer Delay wins, then
// fewer remaining units.
func (d Decision) MoreRestrictive(other Decision) bool {
	if d.Allowed != other.Allowed {
		return !d.Allowed
	}
	if !d.Allowed {
		if d.Impossible != other.Impossible {
			return d.Impossible
		}
		return d.RetryAfter > other.RetryAfter
	}
	if d.Delay != other.Delay {
		return d.Delay > other.Delay
	}
	if d.Remaining != other.Remaining {
		return d.Remaining < other.Remaining
	}
	return d.ResetAfter > other.ResetAfter
}
