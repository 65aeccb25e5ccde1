// Package backpressure protects a service from itself: where a rate limit
// bounds what each client may send, a concurrency limit bounds how much work
// the service takes on at once, and tells callers to slow down when it is
// saturated.
//
// A Limiter admits at most its limit of requests at a time, globally, per
// key, or both. A request over the limit waits in a bounded queue (by length
// and by time), or is shed at once with a *ShedError that carries a
// RetryAfter suggestion, so that an HTTP layer can answer 503 with
// Retry-After.
//
//	l, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(64)})
//	...
//	p, err := l.Acquire(ctx, "", backpressure.Default)
//	if err != nil {
//		return err // a *ShedError, or ctx's error
//	}
//	defer p.Release() // frees the slot on every path, panics included
//	if err := work(ctx); err != nil {
//		p.Done(backpressure.Dropped) // or Ignored, if the error says nothing about load
//		return err
//	}
//	p.Done(backpressure.Succeeded)
//
// # Limits that follow the service
//
// The limit comes from an Controller. Static is a fixed number; AIMD and
// Gradient follow the service's own latency and errors, measured by the
// Limiter between Acquire and Done, so that the limit settles where the
// service is busy without queueing, and sheds exactly the excess, without
// being told the service's capacity or its normal latency. Gradient
// compares the latency of each window of requests with a baseline and
// shrinks the limit by the ratio when requests start to queue; AIMD grows
// by √limit per round trip and backs off by a factor on every drop (an
// error, or a request slower than Config.MaxLatency) and every round trip
// whose mean latency exceeds its baseline by the tolerance. Their doc
// comments say which published algorithms they follow and where they
// differ, and why.
//
// # The baseline, and a service that gets slower
//
// Both judge latency against the same kind of baseline: the service's mean
// latency at a low concurrency, measured by pinning the limit to a few
// requests until enough of them have completed (a probe), as Envoy's
// adaptive concurrency filter measures its minRTT. Netflix's Gradient2
// tracks a long-window average of the latencies instead; it is cheaper,
// since it never pins the limit, but the average follows the latencies the
// limit lets through: under sustained overload it rises with the queue, and
// the limit with it, so the limit drifts up until clients time out. A
// measured baseline does not drift; its cost is that it goes stale when the
// service itself gets slower or faster (a slower dependency, a colder
// cache), and a stale baseline takes the new normal for congestion: the
// limit spirals down to a fraction of what the service still carries. So
// the baseline is measured again not only on a schedule (ProbeInterval,
// 60s) but as soon as the windows show the signature of a stale one, which
// Little's law gives: while requests queue, their latency falls in
// proportion as the requests in flight fall; when the service is slower,
// it does not. Four windows in a row that cut a full limit by a fifth or
// more while the latency per request in flight rose by 30% (or that were
// all faster than the baseline by the tolerance) call for a probe; when it
// finds the service slower, the limit comes back to where it stood before
// those windows, and settles near the concurrency the service carries
// (throughput × latency). True congestion passes the test too, now and
// then; a probe that finds the baseline where it was doubles the run of
// windows the next one needs.
//
// # Seeing the limit move
//
// A core.LimitChanged event carries the Cause of the move (Grew, Queueing,
// Drops, Probing, Probed) and the Baseline the algorithm judged against,
// and Limiter.Baseline reads it at any time (package sluiceotel's Watch
// reports it as the gauge sluice.rate_limiting.concurrency_baseline, beside
// the limit). A spiral is a run of Queueing events with a limit falling and
// a baseline that stays put; a re-learned baseline is a Probing event
// followed by a Probed one with a new Baseline.
//
// # Figures
//
// The overload simulation (internal/sim: the real Limiter on virtual time,
// a backend of C workers with log-normal service times, σ 0.5, open-loop
// Poisson arrivals, clients that give up after 1s while the backend still
// does their work) prints these with
//
//	go run ./core/backpressure/internal/overload -grid
//
// When the service time doubles mid-run (C=32, S 20 → 40ms at 4s, 2x the
// first capacity, measured 2–12s), neither limit spirals: 99–101% of a
// static limit's goodput at the true C, p99 1.13–1.16x the new unloaded
// p99, the limit settled 1.1–1.3s after the change, near 50 (32 workers
// and a queue of √limit). Before, Gradient fell to 7 (69% of static's
// goodput) and AIMD, told MaxLatency 3×S, to 15 (72%). From the same
// defaults, on every backend of C = 8, 32, 100, 400 and S = 5, 20, 50ms,
// nothing is shed at 0.5x; at 4x both serve 100–104% of static's goodput
// with a p99 at most 1.41x the unloaded p99; at 1x they serve 98–100% of
// the capacity from C=32 up, and 94.7–96.4% at C=8, where Poisson arrivals
// at exactly the capacity queue deeper than a limit that keeps latency
// near the baseline admits (the goal, 95%, is missed by at most 0.3
// points, at S=5 and 50ms).
//
// The same shapes run over real loopback HTTP (open-loop Poisson arrivals,
// a backend of C goroutines whose abandoned work is still done) with
//
//	go run ./core/backpressure/internal/overload -http
//
// as far as the machine drives them: on two shared cores, about a thousand
// requests a second, past which the harness itself collapses (every
// request times out, whatever the limiter), so the doubling runs there at
// C=8 and the grid at 4x for C=8 only. Where both run they agree on the
// decisions (nothing shed at 0.5x, no spiral when the service slows, a
// static limit at the true C losing 12–32% at 1x), and disagree in degree:
// over HTTP the adaptive limits serve less at 1x (85–96% of the capacity
// against 95–99%) and their p99 is higher (up to 1.73x the unloaded p99 at
// 4x against 1.41x), because a loaded machine adds scheduling and timer
// delays that the limits read as queueing, and the simulation has none.
//
// # Priorities
//
// Every request carries a Class: Critical, Default or Sheddable. Waiting
// requests are admitted highest class first, first come first served within
// a class; a full queue makes room for a higher class by shedding the newest
// waiter of the lowest class; and Config.Headroom keeps shares of the limit
// that lower classes may not fill, so that Critical traffic always finds a
// slot and Sheddable traffic is the first to go.
//
// # Time
//
// The Limiter reads time only from its core.Clock, so tests and simulations run
// it on virtual time and get exact, repeatable decisions.
//
// # Around it
//
// Every HTTP adapter of sluice takes a Limiter as
// httplimit.Config.Concurrency, beside its rate limits: a request the rate
// limits allow takes a slot, freed when its handler returns on every path,
// and one the Limiter sheds is answered 503 with Retry-After. ReportTo
// hands a Limiter's events to the core.Observer that sees the rate
// limits' decisions, so that one observer sees both. Package redisslots
// is the distributed variant, one limit per key across a fleet, counted in
// Redis with leases that expire when their holder crashes.
package backpressure
