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
// The limit comes from a Controller. Static is a fixed number; AIMD and
// Gradient follow the service's own latency and errors, measured by the
// Limiter between Acquire and Done, so that the limit settles where the
// service is busy without queueing, and sheds exactly the excess. AIMD
// grows by one per round trip and backs off by a factor on every drop (an
// error, or a request slower than Config.MaxLatency). Gradient compares the
// latency of each window of requests with a baseline it measures at a low
// concurrency now and then, and shrinks the limit by the ratio when requests
// start to queue. Their doc comments say which published algorithms they
// follow and where they differ, and why.
//
// # Priorities
//
// Every request carries a core.Class: Critical, Default or Sheddable. Waiting
// requests are admitted highest class first, first come first served within
// a class; a full queue makes room for a higher class by shedding the newest
// waiter of the lowest class; and Config.Headroom keeps fractions of the
// limit that lower classes may not fill, so that Critical traffic always finds a
// slot and Sheddable traffic is the first to go.
//
// # Time
//
// The Limiter reads time only from its core.Clock, so tests and simulations
// run it on virtual time (sluicetest.ManualClock) and get exact, repeatable
// decisions.
//
// # Around it
//
// Every HTTP adapter of sluice takes a Limiter as
// httplimit.Config.Concurrency, beside its rate limits: a request the rate
// limits allow takes a slot, freed when its handler returns on every path,
// and one the Limiter sheds is answered 503 with Retry-After. Its events
// are core.Events, reported to a core.Observer (Config.Observer, named by
// Config.Name): the observer that sees the rate limits' decisions sees the
// concurrency limit's too. Package redisslots
// is the distributed variant, one limit per key across a fleet, counted in
// Redis with leases that expire when their holder crashes.
package backpressure
