package redisstore

import (
	"sync/atomic"
	"time"
)

// deadlines hands out the deadline every caller waits for its decision
// until, without a timer per call. context.WithTimeout costs a timer, a
// channel and five allocations per call, about a microsecond of CPU, a few
// percent of a decision; here, calls that start within the same span (a
// sixteenth of the timeout) share one deadline, one channel and one timer.
// A caller waits between the timeout and 17/16 of it.
type deadlines struct {
	timeout, width time.Duration
	cur            atomic.Pointer[span]
}

func newDeadlines(timeout time.Duration) *deadlines {
	return &deadlines{timeout: timeout, width: max(timeout/16, time.Microsecond)}
}

// current returns a span whose deadline leaves at least the timeout from now.
func (d *deadlines) current(now time.Time) *span {
	s := d.cur.Load()
	if s != nil && s.deadline.Sub(now) >= d.timeout {
		return s
	}
	next := &span{deadline: now.Add(d.timeout + d.width), done: make(chan struct{})}
	time.AfterFunc(d.timeout+d.width, func() { close(next.done) })
	if d.cur.CompareAndSwap(s, next) {
		return next
	}
	// Another call installed a span meanwhile; ours serves this call alone.
	return next
}

// span is a deadline shared by the calls that start within its first
// sixteenth: done closes at the deadline.
type span struct {
	deadline time.Time
	done     chan struct{}
}
