package client_test

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// simClock is virtual time for a set of goroutines that run one at a
// time: each runs until it sleeps on the clock or ends, and the clock
// then moves to the next thing due (a sleeper's wake-up, or an event the
// test scheduled). So goroutines that wait on each other's effects (a
// pacer's schedule, a token bucket) do so in an order that depends on
// nothing but the test, and a run is exact and repeatable.
//
// Only the clock's own sleeps block: a goroutine must not wait on
// anything else (a channel another goroutine fills, a real timer).
type simClock struct {
	mu     sync.Mutex
	now    time.Time
	queue  simQueue
	seq    uint64
	parked chan struct{} // the running goroutine sleeps or has ended
}

// simItem is a goroutine asleep until at, or a function to run then.
type simItem struct {
	at   time.Time
	seq  uint64
	wake chan error // a sleeper's, nil for a function
	ctx  context.Context
	f    func()
	done bool // woken early (its context ended) or stopped
}

func newSimClock(t time.Time) *simClock {
	return &simClock{now: t, parked: make(chan struct{})}
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// SleepUntil parks the calling goroutine until the clock reaches t, or
// its context ends (see cancel).
func (c *simClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	if err := ctx.Err(); err != nil {
		c.mu.Unlock()
		return err
	}
	if !t.After(c.now) {
		c.mu.Unlock()
		return nil
	}
	it := &simItem{at: t, wake: make(chan error, 1), ctx: ctx}
	c.push(it)
	c.mu.Unlock()
	c.parked <- struct{}{}
	return <-it.wake
}

// AfterFunc runs f on the clock's goroutine once d has passed.
func (c *simClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it := &simItem{at: c.now.Add(d), f: f}
	c.push(it)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := it.done
		it.done = true
		return !was
	}
}

func (c *simClock) push(it *simItem) {
	c.seq++
	it.seq = c.seq
	heap.Push(&c.queue, it)
}

// Go runs f in a goroutine of its own until it sleeps or ends.
func (c *simClock) Go(f func()) {
	go func() {
		defer func() { c.parked <- struct{}{} }()
		f()
	}()
	<-c.parked
}

// At runs f (on the caller's goroutine, which may start others with Go)
// when the clock reaches t.
func (c *simClock) At(t time.Time, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.push(&simItem{at: t, f: f})
}

// wakeCanceled ends the sleep of the goroutines whose context has ended,
// with the context's error, once a function run by At has returned: a
// context canceled there (a caller that gives up) is noticed at once, as
// a real clock's sleep notices it.
func (c *simClock) wakeCanceled() {
	for {
		c.mu.Lock()
		var it *simItem
		for _, s := range c.queue {
			if !s.done && s.wake != nil && s.ctx.Err() != nil && (it == nil || s.seq < it.seq) {
				it = s
			}
		}
		if it == nil {
			c.mu.Unlock()
			return
		}
		it.done = true
		c.mu.Unlock()
		it.wake <- it.ctx.Err()
		<-c.parked
	}
}

// Run moves the clock on, item by item, until nothing is due.
func (c *simClock) Run() {
	for {
		c.mu.Lock()
		if c.queue.Len() == 0 {
			c.mu.Unlock()
			return
		}
		it := heap.Pop(&c.queue).(*simItem)
		if it.done {
			c.mu.Unlock()
			continue
		}
		it.done = true
		if it.at.After(c.now) {
			c.now = it.at
		}
		c.mu.Unlock()
		if it.wake != nil {
			it.wake <- nil
			<-c.parked
			continue
		}
		it.f()
		c.wakeCanceled()
	}
}

type simQueue []*simItem

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(*simItem)) }
func (q *simQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}
