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
//     (and its controllers' AIMDConfig, GradientConfig), httplimit.Config
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
//     saturated (Class; its values backpressure.Critical, Default,
//     Sheddable).
//   - Controller: what sets a concurrency limit from completed requests
//     (backpressure.Controller: Static, AIMD, Gradient).
//   - Cost: the units a request takes; an estimate, for a reservation.
//   - Decision: what a rate limit decided for a request (allowed or not,
//     the figures the headers carry).
//   - Denial: a request a limit refused, as an HTTP deny renderer sees it
//     (httplimit.Denial).
//   - Event, Kind: one thing a limit did, told to an Observer, and which
//     thing it was (Allowed, Denied, Queued, Shed, ...).
//   - Fraction: a part of a whole, in [0, 1] (WithNearLimit,
//     backpressure.Headroom).
//   - Headroom: the fractions of a concurrency limit kept from lower
//     classes (backpressure.Headroom).
//   - Outcome: how a call went, as its caller reports it, for what learns
//     from calls: backpressure's controllers (backpressure.Outcome:
//     Succeeded, Dropped, Ignored) and the client's breaker (client.Outcome).
//   - Policy: a validated, immutable rate limit.
//   - Request: units asked of a store (Request), or, in package httplimit,
//     the HTTP request its key functions see (httplimit.Request).
//   - Reserve, Reservation: take an estimated cost now and reconcile it with
//     the actual cost later (Limiter.Reserve); httplimit.Config.Estimates
//     makes a middleware reserve.
//   - Response: an HTTP response a middleware writes (httplimit.Response).
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
