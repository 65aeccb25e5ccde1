// Package client is the client half of sluice: an [http.RoundTripper] that
// survives 429s and outages without turning them into retry storms.
//
// [NewTransport] composes three layers around a base transport. For every
// attempt, outermost first:
//
//   - retry: transient failures (429, 503, 408, configured 5xx, timeouts,
//     connection resets) of idempotent requests are retried with capped,
//     jittered exponential backoff ([Backoff]). Retry-After is a floor:
//     the wait is max(backoff, Retry-After) plus a uniform jitter of up to
//     max(Base, Retry-After/10), so that clients told to come back at the
//     same time do not. Max attempts, a total deadline and a transport-wide
//     [RetryBudget] bound the extra load; a wait that would cross a
//     deadline is not started.
//   - circuit breaker: one [Breaker] per host fails calls at once with a
//     [*CircuitOpenError] while the host is known to be down. The retry
//     layer sees an open breaker as "do not retry now".
//   - pacing: RateLimit, RateLimit-Policy and X-RateLimit-* response fields
//     are remembered per host, and attempts are spaced at the policy's
//     sustained rate (q/w) after a small burst, or spread what remains
//     over the time left when the server gives no window, instead of
//     bursting all that remains and racing to a 429. A host whose 429s
//     carry no such fields is sent to at a rate learned from its 429s. A
//     wait that would pass PacingConfig.MaxDelay, or the deadline, or hold
//     the attempt behind more than the policy's burst allowance, fails the
//     attempt at once with a [*PaceError] and takes no slot of the
//     schedule, so pacing carries on for the requests that fit; an attempt
//     whose caller gives up during its wait gives its slot back. A host
//     that publishes a quota of concurrent requests (qu="concurrent-requests",
//     as httplimit's AdvertiseConcurrency does) gets no more in flight.
//
// # One decision per host
//
// Every attempt to a host passes one decision, whose parts never undo each
// other's accounting: the breaker; the host's concurrency quota; pacing;
// the adaptive throttle ([WithAdaptiveThrottle], the client-side throttling
// of Google's SRE book: reject locally with probability
// max(0, (requests − K·accepts)/(requests + 1)) over a rolling window),
// which judges only the attempts pacing would send, so that the ones
// pacing refuses do not count as refusals of the host; and, for a retry,
// the retry budget and the Retry-After floor. What a service learns of a
// host this way, [Transport.HostCapacity] hands to its own admission
// (httplimit.Config.Dependencies): backpressure travels upstream instead
// of being absorbed in the client.
//
// Against a backend of 1,000 requests/s offered ten times that for 10 s
// (overload_test.go, in virtual time): when the backend reports its quota
// in rate-limit fields, as a sluice server does, pacing holds it to 1.000x
// its capacity, retries included, and throughput is back in full within a
// second of the overload's end. Against 429s without fields, the learned
// rate never lets the load past the capacity (0.15x over the overload: it
// probes up from one request a second, doubling every second) and
// throughput is back in full within 2 s too. The throttle alone (no
// pacing) bounds the load to about K times what the backend accepts: 1.1x
// at K = 1.1, whose recovery is slow (the share let through grows by K per
// window: 17% of the traffic served in the 3 s after the overload), or 2x
// at the default K = 2, which recovers within 2 s.
//
// How it compares, on that scenario, with two designs that do one of these
// things each (from their documentation):
//
//   - The AWS SDKs' adaptive retry mode puts a client-side token bucket
//     before every attempt, its rate cut by CUBIC (β = 0.7) on throttling
//     errors from the client's measured send rate. It reads no rate-limit
//     fields, so it always learns by drawing throttles; its bucket is per
//     client, not per host (AWS advises a client per throttled resource);
//     and it delays requests rather than failing them, so a backlog queues
//     in the caller. sluice's learned rate is the same CUBIC, cut from the
//     mean of the rate it sent at and the rate the host accepted rather
//     than from the send rate alone; pacing from fields draws no 429s to
//     learn from, and a wait past MaxDelay fails instead of queueing.
//   - failsafe-go's adaptive throttler is the SRE book's throttle driven by
//     a failure-rate threshold over a time window (a minute in its
//     example), with a cap on the rejection rate (90% there). At ten times
//     the capacity that cap passes at least a tenth of the offered load,
//     as much again as the backend can serve, and a minute's window would
//     go on rejecting for most of a minute after the overload; it knows no
//     hosts, rate-limit fields or Retry-After. sluice's throttle is per
//     host, with a short window, and composed with pacing, so that it
//     rejects only what pacing lets through.
//
// Constructors check their configuration: a bad option or config field
// (WithMaxAttempts(0), a negative duration, a ratio or rate out of range,
// an unknown jitter mode) is an error wrapping [ErrInvalidConfig], never a
// panic and never a limit silently clamped into another.
//
// The pieces are usable on their own: [Backoff] is a pure schedule,
// [Breaker] wraps any call ([Breaker.Execute], [CallThrough]) or a transport
// ([NewBreakerTransport]), and [ParseRetryAfter] / [ParseRateLimit] parse
// the server's fields.
//
// The package depends only on the standard library. Time is read and slept
// through a [Clock], so tests run in virtual time.
//
// # Retries
//
// Only transient failures are retried: 408, 429 and 503 (other 5xx if
// configured), timeouts and connection resets, never another 4xx; and only
// for idempotent methods, or requests that carry an Idempotency-Key. Bodies
// are replayed through Request.GetBody; a body without one is buffered up
// to 1 MiB, and a larger body is sent once and not retried. Backoff is
// exponential with full jitter (the default), equal jitter, decorrelated
// jitter or none, from a random source per transport, seeded from
// crypto/rand. Retry-After, in seconds or any of the three HTTP-date
// formats, is a floor; one beyond the cap or the deadline returns the
// response at once. The budgets: a maximum number of attempts; a total
// deadline, past which no sleep is taken; and a retry budget shared by the
// whole transport, in the gRPC retry-throttling style (10 tokens, ratio
// 0.1). NewTransport(nil) uses a 200 ms base, a 5 s cap, 4 attempts and a
// 15 s deadline.
//
// # Circuit breaker
//
// One Breaker per host trips on consecutive failures or on a failure rate
// over a rolling window. It counts only server failures and timeouts: a
// call is Succeeded, Failed or Ignored (cancelled by the
// caller), as BreakerConfig.Classify says. Half-open, it admits N probes. A
// 503 with Retry-After holds it open until then. Open, calls fail at once
// with a *CircuitOpenError.
//
// # Pacing
//
// Pacing keeps a client from racing to a 429, bursting and then stalling:
//
//   - With RateLimit-Policy (q, w) and RateLimit (r, t), requests go at the
//     policy's sustained rate q/w, after a burst of a tenth of q
//     (PacingConfig.BurstFraction). Against a bucket of 10 refilled at 2/s, a
//     steady client sends one request every 500 ms, where it used to send
//     10 back to back and wait 5 s for the bucket to fill. Never slower:
//     a spent quota (r=0) holds requests to q/w without a burst, not to its
//     reset, since a bucket refills while the client waits.
//   - With the older fields (RateLimit-Limit/-Remaining/-Reset,
//     X-RateLimit-*), which give no window, it spreads the r units left over
//     the t seconds left. When r reaches 0, it waits for t, as the server
//     said.
//   - A 429 without rate-limit fields (nginx's limit_req, say) teaches a
//     send rate: from one request per Retry-After, doubling each second
//     until the next 429, then cut to 0.7 of the host's rate at each 429 and
//     grown back along a cubic, in the manner of TCP CUBIC and of the AWS
//     SDKs' adaptive retry mode (sendrate.go says what differs and why).
//     Retry-After stays a floor.
//   - A wait longer than PacingConfig.MaxDelay (15 s) or the request's
//     deadline is not taken, nor one behind more requests than the policy
//     lets go at once (its burst allowance, at least one interval): the
//     attempt fails at once with a [*PaceError], so that a service calling
//     the host answers its own callers at once rather than holding them in
//     a backlog they give up on.
//
// Hooks report each retry (with its reason and delay), each pacing wait
// (why, and at what rate) and each breaker state change.
//
// A steady client (100 requests one after another, answers in 20 ms of
// virtual time), before and after pacing at the sustained rate and learning
// from 429s (TestSteadyClientAgainstSluice, TestSteadyClientAgainstNginx):
//
//	server                                        429s drawn per 100  requests answered 429  the client's sends
//	sluice: bucket of 10, 2/s, IETF fields        0 → 0               0 → 0                  runs of 10 and 5 s stalls → one every 500 ms
//	nginx limit_req 2 r/s burst 3, 429 and        33 → 4              27 → 0                 over 1,000 requests: 321 → 15 429s, at 1.93 r/s
//	Retry-After: 1, no fields
//
// Before, the nginx-like server's 429s held each request for Retry-After
// and emptied the retry budget, so 27 requests ended in a 429.
//
// # The thundering herd
//
// examples/herd simulates, in virtual time, 1,000 clients whose requests
// fail at the same moment, against a service down for 30 s that then comes
// back able to serve 500 attempts a second, 50 at a time: half the herd.
// Attempts for each retry strategy (base 200 ms, cap 5 s; deterministic for
// the seed):
//
//	go run ./examples/herd -svg examples/herd/herd.svg
//
//	strategy                    calls    during the outage  after it  drained in
//	no backoff                  310,500  300,000            10,500    1.9 s
//	exponential                 20,500   10,000             10,500    99.1 s
//	full jitter                 16,755   15,755             1,000     5.0 s
//	equal jitter                12,967   11,967             1,000     5.0 s
//	decorrelated jitter         18,375   17,371             1,004     4.9 s
//	full jitter + retry budget  5,000    5,000              0         all 1,000 gave up
//
// Un-jittered, clients that failed together retry together: every 5 s the
// whole herd comes back, the service takes 50 of them, and the rest wait
// another 5 s. Jitter scatters them. Full jitter waits half the ceiling on
// average, so it calls more than plain exponential while the service is
// down, and ten times less once it is back: fewer calls in all, and the
// herd clears in 5 s instead of 99. With a retry budget, each client
// retries 4 times and gives up: the outage costs 5,000 calls, and the
// requests fail instead of waiting. The herd is what makes the difference:
// requests that fail one by one, arriving at random through an outage, are
// scattered already, and there jitter only shortens the mean wait.
package client
