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
//     carry no such fields is sent to at a rate learned from its 429s.
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
