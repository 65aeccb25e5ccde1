// Package backpressure bounds how much work a service takes on at once: a
// concurrency limit, where a rate limit bounds what each client may send.
//
// A Limiter admits at most its limit of requests at a time, globally, per
// key (Config.PerKey), or both. A request over the limit waits in a bounded
// queue (Config.Queue, Config.MaxWait) or is shed at once with a *ShedError
// whose RetryAfter an HTTP layer turns into 503 and Retry-After:
//
//	l, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(64)})
//	...
//	p, err := l.Acquire(ctx, "", core.Default)
//	if err != nil {
//		return err // a *ShedError, or ctx's error
//	}
//	defer p.Release() // frees the slot on every path, panics included
//	if err := work(ctx); err != nil {
//		p.Done(core.Failed) // or core.Ignored, if the error says nothing about load
//		return err
//	}
//	p.Done(core.Succeeded)
//
// The limit comes from a Controller: Static is fixed; NewGradient and
// NewAIMD follow the service's own latency and errors, measured between
// Acquire and Done, so that the limit settles where the service is busy
// without queueing, without being told its capacity. Every request carries a
// core.Class: waiting requests are admitted highest class first, and
// Config.Headroom keeps part of the limit from the lower classes.
//
// A Limiter reads time only from Config.Clock, so tests run it on virtual
// time (sluicetest.ManualClock). Its events (Queued, Waited, Shed,
// LimitChanged) go to Config.Observer, the same core.Observer a rate
// limiter reports to. Package store/redis/redisslots is the distributed
// variant: one limit per key across a fleet, counted in Redis.
//
// The controllers' design, the guarantees and the overload simulation's
// figures are in docs/backpressure.md.
package backpressure
