// Package core is sluice's rate-limiting model: policies, the decisions they
// produce, and the Limiter that decides requests on a Store.
//
// A Policy is a validated, immutable limit: PerSecond, PerMinute and
// PerHour for the common case (GCRA with a burst of n), or NewPolicy for any
// of the seven Algorithms. A Limiter applies policies to keys on a Store
// (store/memory in one process, store/redis/redisstore across a fleet) and
// returns a Decision whose figures (Remaining, ResetAfter, RetryAfter) are
// what a server puts in its headers:
//
//	store, err := memory.New()
//	...
//	limiter, err := core.NewLimiter(store)
//	...
//	d, err := limiter.Take(ctx, core.Request{Key: clientIP, Policy: core.PerSecond(10), Cost: 1})
//	if err != nil {
//		return err // a *RequestError: a malformed request
//	}
//	if !d.Allowed {
//		// answer 429, with Retry-After from d.RetryAfter
//	}
//
// TakeAll decides layered limits (per IP, per user, ...) all or nothing;
// Reserve takes an estimated cost and reconciles it with the actual cost
// later; TakeTurn holds a request until its turn in a LeakyQueue policy,
// which shapes traffic as nginx's limit_req does. A Limiter never waits for
// units to come back: a denial returns at once with its RetryAfter.
//
// A store failure is not an error but a Degraded decision: the Limiter fails
// open by default, or closed (WithFailClosed), or decides on a fallback store
// that applies one nth of each limit for a fleet of n (WithFallback). Every
// decision can be reported to an Observer (WithObserver), which sees
// concurrency limits (package backpressure) through the same Event type.
//
// Package store/storekit holds what a store author builds a Store from and
// store/storetest the conformance suite every store passes; package
// sluicetest has a manual clock for tests.
//
// The algorithms, shaping queues, the fleet's failure bound and the glossary
// are in docs/algorithms.md and docs/core.md.
package core
