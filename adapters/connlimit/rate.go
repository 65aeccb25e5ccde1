package connlimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Rate is one connection's message rate: a GCRA over a bucket policy's
// Burst and Interval, on a clock. It keeps no state in a store (a
// connection lives on one instance) and allocates nothing per message. It
// is not safe for concurrent use: one reader calls it.
type Rate struct {
	clock    core.Clock
	interval time.Duration
	span     time.Duration // Burst intervals
	tat      time.Time     // the theoretical arrival time of the next message
}

// NewRate returns the Rate of one connection under p, a TokenBucket, GCRA
// or LeakyBucket policy (its Burst messages at once, then one per
// Interval), on clock (nil: core.SystemClock).
func NewRate(p *core.Policy, clock core.Clock) (*Rate, error) {
	if p == nil {
		return nil, errors.New("connlimit: nil policy")
	}
	if p.Interval() <= 0 || p.Algorithm() == core.LeakyQueue {
		return nil, fmt.Errorf("connlimit: policy %q is a %v: a message rate needs TokenBucket, GCRA or LeakyBucket", p.Name(), p.Algorithm())
	}
	if clock == nil {
		clock = core.SystemClock{}
	}
	return &Rate{clock: clock, interval: p.Interval(), span: time.Duration(p.Burst()) * p.Interval()}, nil
}

// Allow reports whether a message may pass now, and counts it if so: a
// loop that drops (or answers) what comes too fast.
func (r *Rate) Allow() bool {
	now := r.clock.Now()
	if r.tat.Before(now) {
		r.tat = now
	}
	if next := r.tat.Add(r.interval); next.Sub(now) <= r.span {
		r.tat = next
		return true
	}
	return false
}

// Wait holds the caller until a message may pass and counts it: a loop
// that reads no faster than the rate, leaving the rest in the
// connection's buffers (and the client's, under flow control). It returns
// ctx's error, counting nothing, if ctx ends first.
func (r *Rate) Wait(ctx context.Context) error {
	now := r.clock.Now()
	if r.tat.Before(now) {
		r.tat = now
	}
	next := r.tat.Add(r.interval)
	if at := next.Add(-r.span); at.After(now) {
		if err := r.clock.SleepUntil(ctx, at); err != nil {
			return err
		}
	}
	r.tat = next
	return nil
}
