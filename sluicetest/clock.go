package sluicetest

import (
	"context"
	"slices"
	"sync"
	"time"
)

// ManualClock is a clock that moves only when told to, for exact tests: it
// is a core.Clock, and it can hold callers (SleepUntil, which a
// core.Limiter waits on for a shaping queue's turn) and run timers
// (AfterFunc, which a backpressure.Limiter bounds queue waits with), both
// on its own time. It is safe for concurrent use. The zero value reads the
// zero time.Time; NewManualClock starts elsewhere.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	wake   chan struct{} // closed when the clock moves; nil while nobody sleeps
	timers []*timer
}

// NewManualClock returns a ManualClock reading t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward if d is negative), and
// runs the timers that fall due, in the order they fall due, on the
// caller's goroutine before it returns.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.set(c.now.Add(d))
}

// Set moves the clock to t, and runs the timers that fall due as Advance
// does.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	c.set(t)
}

// SleepUntil waits until the clock reads t or later, or until ctx is done if
// that comes first: nil once the clock has reached t, ctx.Err() otherwise.
// The time is the caller's to choose, not a duration from whenever the
// sleep begins, so a test that moves the clock as soon as a decision is
// made needs no further synchronisation with the sleeper.
func (c *ManualClock) SleepUntil(ctx context.Context, t time.Time) error {
	for {
		c.mu.Lock()
		if !c.now.Before(t) {
			c.mu.Unlock()
			return nil
		}
		if c.wake == nil {
			c.wake = make(chan struct{})
		}
		wake := c.wake
		c.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// AfterFunc arranges for f to run once the clock has moved d past its
// current reading: inside the Advance or Set that moves it there. It
// returns a function that cancels the call, reporting false if the call
// has already run or been cancelled.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t.stop
}

// Timers returns the number of AfterFunc calls still pending: neither run
// nor cancelled.
func (c *ManualClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// set moves the clock to t with c.mu held, unlocks it, and runs the timers
// that fell due.
func (c *ManualClock) set(t time.Time) {
	c.now = t
	if c.wake != nil {
		close(c.wake) // the sleepers look at the time again
		c.wake = nil
	}
	var due []*timer
	c.timers = slices.DeleteFunc(c.timers, func(t *timer) bool {
		if t.at.After(c.now) {
			return false
		}
		t.done = true
		due = append(due, t)
		return true
	})
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *timer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.f()
	}
}

// timer is a pending AfterFunc call.
type timer struct {
	c    *ManualClock
	at   time.Time
	f    func()
	done bool // run or cancelled
}

func (t *timer) stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	c.timers = slices.DeleteFunc(c.timers, func(u *timer) bool { return u == t })
	return true
}
