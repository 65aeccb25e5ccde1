// Package client is the client half of sluice: an [http.RoundTripper] that
// survives 429s and outages without turning them into retry storms.
//
//	t, err := client.NewTransport(nil) // over http.DefaultTransport
//	if err != nil {
//		return err
//	}
//	hc := &http.Client{Transport: t}
//
// [NewTransport] composes three layers around a base transport, outermost
// first:
//
//   - retry: transient failures (408, 429, 503, timeouts, connection resets)
//     of idempotent requests are retried with capped, jittered exponential
//     backoff ([Backoff]), Retry-After as a floor, within a number of
//     attempts, a total deadline and a transport-wide [RetryBudget];
//   - circuit breaker: one [Breaker] per host fails calls at once with a
//     [*CircuitOpenError] while the host is known to be down;
//   - pacing: RateLimit, RateLimit-Policy and X-RateLimit-* response fields
//     are remembered per host and attempts spaced at the policy's sustained
//     rate, or at a rate learned from bare 429s; a wait past
//     [PacingConfig.MaxDelay] fails at once with a [*PaceError].
//
// [WithAdaptiveThrottle] adds the SRE book's client-side throttle, and
// [Transport.HostCapacity] hands what the transport learns of a host to a
// service's own admission, so that backpressure travels upstream. Each piece
// is usable alone: [Backoff] is a pure schedule, [Breaker] wraps any call,
// and package [github.com/sluice-go/sluice/fields] parses the server's
// fields. Options and configs out of range are errors wrapping
// [ErrInvalidConfig], never clamped. Time is read through a core.Clock, so
// tests run in virtual time.
//
// The layers' design, the overload and herd figures and comparisons with
// other clients are in docs/client.md.
package client
