package backpressure

import (
	"context"

	"github.com/sluice-go/sluice/core"
)

// Observe makes o the Limiter's observer unless Config gave it one, so
// that a limit built without an observer inherits the one an application
// gives once, to admit.Config.Observer: it makes a Limiter core.Observable.
// Call it before the Limiter admits anything.
func (l *Limiter) Observe(o core.Observer) {
	if l.observe == nil && o != nil {
		l.observe = o
		l.announce()
	}
}

// announce tells a new observer the limit in force, so that a gauge of it
// has a value before the first request: a LimitChanged event whose Cause is
// "start". A limit without a Controller (PerKey alone) has none to tell.
func (l *Limiter) announce() {
	if l.ctl == nil {
		return
	}
	l.mu.Lock()
	e := core.Event{Kind: core.LimitChanged, LimitName: l.name, Limit: int64(l.limit), Cause: "start"}
	l.mu.Unlock()
	l.observe(context.Background(), e)
}
