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
//     wait that would pass PacingConfig.MaxDelay, or the deadline, fails
//     the attempt at once with a [*PaceError] and takes no slot of the
//     schedule, so pacing carries on for the requests that fit. A host
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
// host this way, [Transport.Dependency] hands to its own admission
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
package client
