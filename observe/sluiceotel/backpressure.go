package sluiceotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/metric"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// observeWait records the end of a request's wait in a queue (a LeakyQueue
// policy's, or a concurrency limit's, as backpressure.Config.Observer sees it),
// and a request shed: how long it waited and how the wait ended, with the
// request's class if it has one, and every request not served, with why.
// Queued requests and limit changes are left to Watch, whose callback reads
// the queue and the limit whether or not anything happens.
func (m *Metrics) observeWait(ctx context.Context, ss *sets, e core.Event) {
	c := classNone // a LeakyQueue policy's wait has no class
	if e.LimitName != "" {
		c = classOf(e.Class)
	}
	switch e.Kind {
	case core.Waited:
		m.timeInQueue.Record(ctx, e.Waited.Seconds(), ss.get(slot{kind: kindQueue, class: c}).record...)
	case core.Shed:
		r := shedReason(e.Err)
		if waited(r) {
			m.timeInQueue.Record(ctx, e.Waited.Seconds(), ss.get(slot{kind: kindQueue, reason: r, class: c}).record...)
		}
		m.shed.Add(ctx, 1, ss.get(slot{kind: kindShed, reason: r, class: c}).add...)
	}
}

// Watch reports l's queued requests, requests in flight, limit and baseline
// (once measured) under the policy attribute limit (its Config.Name) each
// time the metrics are collected, and starts its shed series at zero.
// Unregister the registration when l is discarded, or the callback keeps it.
//
//	cfg.Name, cfg.Observer = "checkout", metrics.Observe
//	l, err := backpressure.New(cfg)
//	...
//	reg, err := metrics.Watch("checkout", l)
func (m *Metrics) Watch(limit string, l *backpressure.Limiter) (metric.Registration, error) {
	ss := m.names.get(limit, limit)
	m.startShedAtZero(ss)
	opt := ss.get(slot{kind: kindPolicy}).observe
	return m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(m.queued, int64(l.Waiting()), opt...)
		o.ObserveInt64(m.active, int64(l.InFlight()), opt...)
		o.ObserveInt64(m.limit, int64(l.Limit()), opt...)
		if b := l.Baseline(); b > 0 {
			o.ObserveFloat64(m.baseline, b.Seconds(), opt...)
		}
		return nil
	}, m.queued, m.active, m.limit, m.baseline)
}

// shedReason is why a request was not served, from the error its
// Shed event carries: a rejection's reason, or canceled when the
// request's context ended while it waited.
func shedReason(err error) reason {
	if rej, ok := err.(*backpressure.ShedError); ok {
		return reasonOf(rej.Reason)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return reasonOf(backpressure.Canceled)
	}
	return reasonOther
}

// waited reports whether a request shed for reason r had waited in the
// queue first.
func waited(r reason) bool {
	return r == reasonOf(backpressure.Displaced) || r == reasonOf(backpressure.WaitTimeout) || r == reasonOf(backpressure.Canceled)
}
