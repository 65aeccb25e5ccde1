package backpressure

import (
	"context"

	"github.com/sluice-go/sluice/core"
)

// ReportTo returns an Observer that hands a Limiter's events to o, as the
// core events a rate limiter's observer sees, under the name limit: so that
// one core.Observer (metrics, logs, or both through core.Observers) sees
// rate limits and concurrency limits alike. The name stands where a rate
// limit's policy name goes (core.Event.LimitName); the class is the
// request's (core.Event.Class).
//
//	observe := core.Observers(metrics.Observe, logs)
//	rates, err := core.NewLimiter(store, core.WithObserver(observe))
//	...
//	slots, err := backpressure.New(backpressure.Config{
//		Algorithm: backpressure.Static(64),
//		Observer:  backpressure.ReportTo("api", observe),
//	})
//
// Kinds map to outcomes one to one: Queued to core.OutcomeQueued, Waited to
// core.OutcomeWaited (Latency: the wait), Shed to core.OutcomeShed
// (Latency: the wait, if any; Err: the *Rejection, or the request
// context's error if it ended while the request waited), LimitChanged to
// core.OutcomeLimitChanged (Units: the new limit). A nil o gives a nil
// Observer, which a Limiter takes as none.
func ReportTo(limit string, o core.Observer) Observer {
	if o == nil {
		return nil
	}
	return func(ctx context.Context, e Event) {
		ce := core.Event{Key: e.Key, LimitName: limit, Class: e.Class.String()}
		switch e.Kind {
		case Queued:
			ce.Outcome = core.OutcomeQueued
		case Waited:
			ce.Outcome, ce.Latency = core.OutcomeWaited, e.Wait
		case Shed:
			ce.Outcome, ce.Latency = core.OutcomeShed, e.Wait
			if e.Rejection != nil {
				ce.Err = e.Rejection
			} else {
				ce.Err = ctx.Err()
			}
		case LimitChanged:
			ce.Outcome, ce.Units, ce.Class = core.OutcomeLimitChanged, int64(e.NewLimit), ""
		default:
			return
		}
		o(ctx, ce)
	}
}
