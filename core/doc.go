// Package core is sluice's rate-limiting model as its users configure it:
// policies (NewPolicy, or PerSecond and its kin for the common case), the
// decisions they produce, and the Limiter that puts a Store to work, with its
// failure modes, fallback and observer, and its waiting for the turns a
// shaping queue (LeakyQueue) hands out. It also holds the vocabulary the
// rest of sluice shares: the Event an Observer sees, from rate limits and
// concurrency limits (package backpressure) alike, the Clock they all read,
// and a request's Class. It does no I/O and imports no framework.
//
// What a store author implements against lives apart: the Store contract is
// here, since users pass stores to NewLimiter, but the per-key state, the
// algorithms over it, the bounds they compute within and the input checks
// every store must make are in store/storekit, and the conformance suite
// every store must pass is store/storetest. What tests of code built on
// sluice need (a manual clock) is in package sluicetest.
//
// # Policies
//
// A policy is built once and validated: NewPolicy(PolicyConfig{...}), or
// PerSecond, PerMinute and PerHour for the common case (GCRA, a burst of n,
// named "10-per-second" and so on). A bad configuration is a *PolicyError
// naming the field at fault: a zero or negative quota, period or burst; an
// unknown algorithm; a burst given to a window algorithm; a sliding log
// larger than 100,000 entries; a rate above one unit per microsecond; a
// queue without a bound on waiting, or a MaxDelay or MaxQueue given to
// anything but a queue.
//
// # Algorithms
//
//	algorithm             state per key                   burst                                          exact?
//	TokenBucket           tokens + time                   Burst, refilled at Quota per Period            yes
//	GCRA                  one timestamp                   the token bucket's decisions                   yes
//	LeakyBucket (meter)   level + time                    the token bucket seen from the other side      yes
//	FixedWindow           count + window                  up to 2×Quota across a boundary                per window
//	SlidingLog            one entry per admitted request  never over Quota in any trailing Period        yes
//	SlidingCounter        two counts + window             at most Quota×(1+elapsed/Period), ≤ 2×Quota    approximate
//	LeakyQueue (queue)    one timestamp                   Burst at once, then one every Period/Quota,    yes
//	                                                      waiting up to MaxDelay
//
// All arithmetic runs in integer microseconds, because the Redis scripts
// compute in Lua doubles, which hold integers exactly only below 2^53. A
// bucket refills one unit every Period/Quota, rounded down to a whole
// microsecond. Fixed windows are aligned to the Unix epoch.
//
// # Decisions
//
// A Decision carries Allowed, Limit, Remaining, ResetAfter (the time until
// the key is full again) and RetryAfter. RetryAfter is exact: the same
// request is denied one microsecond earlier and admitted at that moment;
// the conformance suite (store/storetest) checks this for every algorithm
// on every store.
//
//   - A cost larger than the burst (for a queue, the burst plus the units
//     its queue holds) is Impossible: it is denied at once, takes nothing,
//     and the decision has no retry time.
//   - Layered requests (Limiter.TakeAll) are all-or-nothing. The decision
//     reported is the most restrictive one (storekit.MostRestrictive).
//   - For costs known only afterwards, Limiter.Reserve takes an estimate and
//     Reservation.Reconcile the actual cost: it refunds what was unused or
//     charges the extra, into debt if need be.
//
// # Hostile values
//
// Every value a caller passes is checked before it touches state, alike on
// every store: a cost or an estimate must be 1 to maxCost (2^40), an
// actual cost 0 to maxCost, an Adjust delta within ±maxCost. Anything else
// is a *RequestError that names the value (errors.As).
// Debt saturates instead of overflowing: a bucket stops taking charges once
// what it owes would take a year to refill, and a window's count stops at
// 2^50. The HostileValues conformance scenario
// holds every store to core's own figures at these bounds.
//
// # Failure modes
//
// When the store fails, a Limiter fails open by default: it admits the
// request and reports the failure. WithFailClosed denies it instead, and
// the HTTP adapters answer 503. A fallback store (WithFallback, typically a
// store/memory) applies the limit locally instead, and WithFallback(s, n)
// makes it apply one nth of every limit, for a fleet of n instances: the fleet's fallbacks then admit at most
// n×(Burst/n + 1) + Rate×T units in an outage of length T (window
// algorithms: n×max(Quota/n, 1) per window), on top of what the shared
// store admitted before it failed (see store/redis/redisstore).
//
// # Shaping queues
//
// The other algorithms admit a request or deny it. LeakyQueue shapes: a
// request over the rate waits its turn, and requests are released one
// Period/Quota apart, as nginx's limit_req does with a burst. The store
// hands out the turn: a grant's Decision.Delay is how long the caller must
// hold the request. Limiter.TakeTurn decides and waits in one call (a
// middleware calls nothing else). A request whose turn would come more than
// MaxDelay from now, or that would leave more than MaxQueue units waiting,
// is denied at once and takes nothing: the decision is made up front from
// the turn, never after waiting, and its RetryAfter is the time until the
// queue has drained enough to take it.
//
//	upstream := core.MustPolicy(core.PolicyConfig{
//		Name: "upstream", Algorithm: core.LeakyQueue,
//		Quota: 2, Period: time.Second, // limit_req_zone ... rate=2r/s
//		Burst: 1,                      // no delay=: only a request alone passes at once
//		MaxQueue: 10,                  // burst=10: up to 10 requests wait
//	})
//
// nginx's limit_req in PolicyConfig terms:
//
//	rate=r               Quota: r, Period: time.Second (time.Minute for r/m)
//	burst=b              Burst: 1, MaxQueue: b
//	burst=b delay=N      Burst: N+1, MaxQueue: b−N (N requests past the first pass without waiting)
//	burst=b nodelay      nothing waits: use GCRA with Burst: b+1
//
// MaxDelay bounds the wait in time rather than in requests: MaxQueue: 10 at
// 2/s is MaxDelay: 5*time.Second; with both set, the tighter bound holds. A
// burst of 20 requests against that policy: the 11 whose turns fall within
// the 5 s pass, released at 0, 0.5, 1, ..., 5.0 s; the other 9 are denied at
// once with RetryAfter 0.5 s. The conformance suite checks this to the
// microsecond on the memory store and on Redis (single server, batched,
// Cluster, Ring); ExampleLimiter_TakeTurn runs it.
//
//   - Waiting honours the context. If its deadline comes before the turn,
//     the request does not wait at all: it is denied at once with
//     RetryAfter set to the wait it was offered, and its units go back. If
//     the context ends while the request waits, its units go back (a
//     negative Adjust on every layer it took from) and Wait returns the
//     context's error; the next request gets that turn.
//   - A turn given back shortens the queue from its end, not where the
//     request stood: the requests already waiting keep their turns, and the
//     next request may be released at the same moment as one of them. Over
//     time the rate holds, and the queue never holds more than its bound.
//   - Remaining counts the requests that would pass without waiting;
//     ResetAfter is the time until the queue is empty; Limit and Window are
//     those of a bucket of Burst.
//   - In a layered request the reported decision carries the longest Delay
//     of its layers, and a denial by any layer takes no turn from any queue.
//   - The Redis store refuses to split or lease a queue: split or leased, a
//     queue would release several requests at once.
//
// # Observers
//
// A Limiter reports to one Observer (WithObserver) every decision (allowed,
// near the limit, denied, store failed, with the fallback's error too if it
// failed as well), with its key, policy and latency; each wait in a shaping
// queue (queued, then waited or shed); and the leases a store takes and
// gives back. Observers(a, b, ...) hands each event to several. A
// concurrency limit (core/backpressure) reports to the same observer
// through backpressure.Config.Observer, so that one observer sees rate limits and
// concurrency limits alike; observe/sluiceotel (OpenTelemetry metrics) and
// observe/sluiceslog (log/slog lines at a bounded rate) are two such
// observers. Events are plain values: observing allocates nothing.
// WithoutLatency drops the store latency and the two clock reads it costs.
//
// # Options
//
// Two styles, one for each kind of thing:
//
//   - A constructor of infrastructure (a Limiter, a store, an observer, a
//     client transport) takes functional options: NewLimiter(store,
//     WithFallback(mem, 4)), memory.New(memory.WithMaxKeys(n)). They say
//     how a part is wired (clocks, fallbacks, connections), every one has a
//     default, and most programs pass none.
//   - A description of limits is a config struct, validated as a whole,
//     whose errors name the field at fault: PolicyConfig, backpressure.Config
//     (and its controllers' AIMDConfig, GradientConfig), admit.Config
//     and its Rules, client.BreakerConfig and PacingConfig. Limits are
//     data: they are read from files, compared, printed.
//
// # Glossary
//
// One word, one meaning, across the module:
//
//   - Algorithm: how a rate policy counts units (Algorithm: TokenBucket,
//     GCRA, ..., LeakyQueue).
//   - Class: how much a request matters when a concurrency limit is
//     saturated (Class; its values core.Critical, Default,
//     Sheddable).
//   - Controller: what sets a concurrency limit from completed requests
//     (backpressure.Controller: Static, AIMD, Gradient).
//   - Cost: the units a request takes; an estimate, for a reservation.
//   - Decision: what a rate limit decided for a request (allowed or not,
//     the figures the headers carry).
//   - Denial: a request a limit refused, as an HTTP deny renderer sees it
//     (admit.Denial).
//   - Event, Kind: one thing a limit did, told to an Observer, and which
//     thing it was (Allowed, Denied, Queued, Shed, ...).
//   - Fraction: a part of a whole, in [0, 1] (WithNearLimit,
//     backpressure.Headroom).
//   - Headroom: the fractions of a concurrency limit kept from lower
//     classes (backpressure.Headroom).
//   - Outcome: how a call went, as its caller reports it, for what learns
//     from calls: backpressure's controllers (core.Outcome:
//     Succeeded, Dropped, Ignored) and the client's breaker (core.Outcome).
//   - Policy: a validated, immutable rate limit.
//   - Request: units asked of a store (Request), or, in package httplimit,
//     the HTTP request its key functions see (admit.Request).
//   - Reserve, Reservation: take an estimated cost now and reconcile it with
//     the actual cost later (Limiter.Reserve); admit.Config.Estimates
//     makes a middleware reserve.
//   - Response: an HTTP response a middleware writes (admit.Response).
//   - Settlement: what waits on a response once the handler has run: a
//     charge to keep or give back, a concurrency slot to free.
//   - Share: one nth of a limit, for one of n parties enforcing it together
//     (Policy.Share, WithFallback's share).
//   - Shed: refused by a concurrency limit (backpressure.ShedError, the Shed
//     event), where a rate limit denies.
//   - Turn: the time a LeakyQueue policy grants a request (Decision.Delay
//     from now), which Limiter.TakeTurn waits for.
//   - Verdict: what httplimit's Decide tells an adapter to do next.
//   - Wait: only ever a request waiting in a queue: for its turn, or for a
//     concurrency slot. No Limiter method waits for units to come back.
package core
