package sluiceotel

import (
	"context"
	"errors"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// observeLimit records a concurrency limit's events, and a dependency
// link's: the requests queued and in flight, counted up and down as they
// come and go; the limit, as it moves and as each request finds it; the
// baseline an adaptive limit judges latency against; and the waits and
// sheds, as observeWait does. A dependency link's LimitChanged, whose Err
// says what moved it, is a rate, not a number of requests: the gauge of
// concurrency limits leaves it out.
func (m *Metrics) observeLimit(ctx context.Context, ss *sets, e core.Event) {
	opt := ss.get(slot{kind: kindPolicy})
	switch e.Kind {
	case core.Admitted:
		m.active.Add(ctx, 1, opt.add...)
		m.limit.Record(ctx, e.Limit, opt.record...)
	case core.Released:
		m.active.Add(ctx, -1, opt.add...)
	case core.Queued:
		m.queued.Add(ctx, 1, opt.add...)
	case core.Waited:
		m.queued.Add(ctx, -1, opt.add...)
		m.active.Add(ctx, 1, opt.add...)
	case core.Shed:
		if waited(shedReason(e.Err)) {
			m.queued.Add(ctx, -1, opt.add...)
		}
	case core.LimitChanged:
		if e.Err == nil {
			m.limit.Record(ctx, e.Limit, opt.record...)
			if e.Baseline > 0 {
				m.baseline.Record(ctx, e.Baseline.Seconds(), opt.record...)
			}
		}
		return
	}
	m.observeWait(ctx, ss, e)
}

// observeWait records the end of a request's wait in a queue (a LeakyQueue
// policy's, or a concurrency limit's), and a request shed: how long it
// waited and how the wait ended, with the request's class if it has one,
// and every request not served, with why.
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
