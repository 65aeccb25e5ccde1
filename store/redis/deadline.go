package redis

import (
	"context"
	"sync/atomic"
	"time"
)

// deadlines hands out the deadline of every store call without a timer per
// call. context.WithTimeout costs a timer, a channel and five allocations
// per call, about a microsecond of CPU, a few percent of a decision; here,
// calls that start within the same span (a sixteenth of the timeout)
// share one deadline, one channel and one timer. A call's deadline is thus
// between the timeout and 17/16 of it from its start.
//
// A call on a span does not end early when the caller's context is
// cancelled: it is short, and better finished than abandoned (an abandoned
// script may have taken units, and its connection must be closed). A
// caller's context with a deadline earlier than the span's gets
// context.WithTimeout instead, which honours both.
type deadlines struct {
	timeout, width time.Duration
	cur            atomic.Pointer[span]
}

func newDeadlines(timeout time.Duration) *deadlines {
	return &deadlines{timeout: timeout, width: max(timeout/16, time.Microsecond)}
}

// with returns the context of a call starting now under parent, and the
// function that releases it.
func (d *deadlines) with(parent context.Context) (context.Context, context.CancelFunc) {
	now := time.Now()
	if pd, ok := parent.Deadline(); ok && pd.Before(now.Add(d.timeout+d.width)) {
		return context.WithTimeout(parent, d.timeout)
	}
	s := d.current(now)
	if parent == context.Background() {
		return s, noCancel
	}
	return &spanCtx{Context: parent, s: s}, noCancel
}

func noCancel() {}

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

// span is a context that ends at its deadline; it carries no values.
type span struct {
	deadline time.Time
	done     chan struct{}
}

func (s *span) Deadline() (time.Time, bool) { return s.deadline, true }
func (s *span) Done() <-chan struct{}       { return s.done }
func (s *span) Value(any) any               { return nil }

func (s *span) Err() error {
	select {
	case <-s.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// spanCtx is a caller's context with a span's deadline: the caller's values,
// the span's deadline, channel and error.
type spanCtx struct {
	context.Context
	s *span
}

func (c *spanCtx) Deadline() (time.Time, bool) { return c.s.deadline, true }
func (c *spanCtx) Done() <-chan struct{}       { return c.s.done }
func (c *spanCtx) Err() error                  { return c.s.Err() }
