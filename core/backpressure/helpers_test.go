package backpressure

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// fakeClock is a Clock whose time moves only when told to. Its timers fire
// inside Advance, on the caller's goroutine, in the order they fall due.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
	fired   bool
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newFakeClock() *fakeClock { return &fakeClock{now: epoch} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// SleepUntil is never called: nothing here waits on the clock.
func (c *fakeClock) SleepUntil(context.Context, time.Time) error {
	panic("fakeClock: SleepUntil unused")
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t.Stop
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.fired || t.stopped {
		return false
	}
	t.stopped = true
	return true
}

// Advance moves the clock by d, firing the timers that fall due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.fired = true
			due = append(due, t)
		default:
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.f()
	}
}

// pending returns the number of timers neither fired nor stopped.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped && !t.fired {
			n++
		}
	}
	return n
}

// recorder collects a Limiter's events and, once l is set, the Limiter's
// counts (in flight, waiting) as each event's observer saw them.
type recorder struct {
	// all keeps the slots' Admitted and Released events, and the limit
	// announced at the start, which the tests that follow the other events
	// leave out.
	all    bool
	mu     sync.Mutex
	l      *Limiter
	events []core.Event
	counts [][2]int
	taken  [][2]int // the counts of the events take last returned
}

func (r *recorder) observe(_ context.Context, e core.Event) {
	if !r.all && (e.Kind == core.Admitted || e.Kind == core.Released || e.Cause == "start") {
		return
	}
	r.mu.Lock()
	l := r.l
	r.mu.Unlock()
	var c [2]int
	if l != nil {
		c = [2]int{l.InFlight(), l.Waiting()}
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.counts = append(r.counts, c)
	r.mu.Unlock()
}

// takenCounts returns the counts of the events the last take returned.
func (r *recorder) takenCounts() [][2]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.taken
}

func (r *recorder) take() []core.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	es := r.events
	r.events, r.taken, r.counts = nil, r.counts, nil
	return es
}

// result is what an Acquire running in a goroutine returned.
type result struct {
	p   Permit
	err error
}

// acquireAsync starts an Acquire and waits until it is queued (the
// Limiter's Waiting count reaches want), so that tests enqueue in a known
// order.
func acquireAsync(t *testing.T, ctx context.Context, l *Limiter, key string, class core.Class, want int) <-chan result {
	t.Helper()
	ch := make(chan result, 1)
	go func() {
		p, err := l.Acquire(ctx, key, class)
		ch <- result{p, err}
	}()
	require.Eventually(t, func() bool { return l.Waiting() == want }, 10*time.Second, time.Millisecond, "waiting never reached %d", want)
	return ch
}

// recv returns the result on ch, failing the test if none comes.
func recv(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no result")
		return result{}
	}
}

func rejection(t *testing.T, err error) *ShedError {
	t.Helper()
	var r *ShedError
	require.ErrorAs(t, err, &r)
	require.ErrorIs(t, err, ErrShed)
	return r
}
