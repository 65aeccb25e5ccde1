package sluiceotel

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/sluice-go/sluice/backpressure"
)

// Backpressure returns the observer to set as a backpressure.Limiter's
// Config.Observer, recording what it does under the policy attribute
// limiter: how long each request waited in its queue and how the wait
// ended, and every request it shed, with why. Call Watch with the Limiter
// once built, for its queue, its requests in flight and its limit.
//
//	cfg.Observer = metrics.Backpressure("checkout")
//	l, err := backpressure.New(cfg)
//	...
//	reg, err := metrics.Watch("checkout", l)
func (m *Metrics) Backpressure(limiter string) backpressure.Observer {
	ss := m.names.get(limiter, limiter)
	return func(ctx context.Context, e backpressure.Event) {
		switch e.Kind {
		case backpressure.Waited:
			m.timeInQueue.Record(ctx, e.Wait.Seconds(), ss.get(slot{kind: kindQueue, class: classOf(e.Class)}).record...)
		case backpressure.Shed:
			r := reasonOf(e.Reason)
			if waited(e.Reason) {
				m.timeInQueue.Record(ctx, e.Wait.Seconds(), ss.get(slot{kind: kindQueue, reason: r, class: classOf(e.Class)}).record...)
			}
			m.shed.Add(ctx, 1, ss.get(slot{kind: kindShed, reason: r, class: classOf(e.Class)}).add...)
		}
		// Queued and LimitChanged are read by Watch's callback instead, which
		// sees the queue and the limit whether or not anything happens.
	}
}

// Watch reports l's queued requests, requests in flight and limit, under
// the policy attribute limiter, each time the metrics are collected, until
// the registration is unregistered: do so when l is discarded, or the
// callback keeps it.
func (m *Metrics) Watch(limiter string, l *backpressure.Limiter) (metric.Registration, error) {
	opt := m.names.get(limiter, limiter).get(slot{kind: kindPolicy}).observe
	return m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(m.queued, int64(l.Waiting()), opt...)
		o.ObserveInt64(m.active, int64(l.InFlight()), opt...)
		o.ObserveInt64(m.limit, int64(l.Limit()), opt...)
		return nil
	}, m.queued, m.active, m.limit)
}

// waited reports whether a request shed for reason r had waited in the
// queue first.
func waited(r backpressure.Reason) bool {
	return r == backpressure.Displaced || r == backpressure.WaitTimeout || r == backpressure.Canceled
}
