package client

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/fields"
)

// Pacer is the Transport's pacing layer on its own, for a client of
// another protocol (sluicegrpc's interceptor): it remembers what each
// host's answers said of its limits, and spaces the calls to it as the
// Transport spaces requests. It is safe for concurrent use.
type Pacer struct {
	p     *pacer
	clock core.Clock
}

// NewPacer returns a Pacer tuned by cfg (zero fields take defaults) on clk
// (nil: core.SystemClock), or an error wrapping ErrInvalidConfig when a
// field of cfg is out of range.
func NewPacer(cfg PacingConfig, clk core.Clock) (*Pacer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if clk == nil {
		clk = core.SystemClock{}
	}
	return &Pacer{p: newPacer(cfg.withDefaults()), clock: clk}, nil
}

// Wait waits for a call to host's paced turn, and counts it against the
// host's quotas. A wait past PacingConfig.MaxDelay or ctx's deadline fails
// at once with a *PaceError, counting nothing; ctx's error if it ends during
// the wait, which gives its turn back.
func (p *Pacer) Wait(ctx context.Context, host string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := p.clock.Now()
	limit := time.Duration(1<<63 - 1)
	if dl, ok := ctx.Deadline(); ok {
		limit = max(dl.Sub(now), 0)
	}
	info := p.p.reserve(host, now, limit, nil)
	if info.refused {
		return &PaceError{Host: host, Reason: info.reason, Policy: info.policy, Wait: info.delay}
	}
	if err := sleep(ctx, p.clock, info.delay); err != nil {
		p.p.refund(host, p.clock.Now()) // the slot goes to a call that will use it
		return err
	}
	return nil
}

// Learn records what host answered a call sent at sent: the quotas it
// reported (fields.Append, fields.AppendLines), the answer's
// HTTP-equivalent status (429 for a rate limit, 503 for a shed; 200 for a
// success), and the delay it asked for before another call, if
// hasRetryAfter. qs may be reordered.
func (p *Pacer) Learn(host string, qs []fields.Status, status int, retryAfter time.Duration, hasRetryAfter bool, sent time.Time) {
	p.p.apply(host, qs, status, retryAfter, hasRetryAfter, sent, p.clock.Now())
}
