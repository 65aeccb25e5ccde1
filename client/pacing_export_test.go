package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/fields"
)

// A Pacer spaces calls to a host at the sustained rate its quota states,
// after the burst allowance; a host held by a Retry-After waits it out; a
// wait past the deadline fails at once, counting nothing.
func TestPacer(t *testing.T) {
	clock := newFakeClock() // sleeps move it, and are recorded
	p, err := NewPacer(PacingConfig{BurstFraction: 0.1}, clock)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, p.Wait(ctx, "h"), "nothing known: no wait")

	// 10 per 10s: one a second, a burst of one.
	p.Learn("h", []fields.Status{{Policy: "p", Limit: 10, Remaining: 9, Reset: time.Second, Window: 10 * time.Second}}, 200, 0, false, clock.Now())
	require.NoError(t, p.Wait(ctx, "h"))
	assert.Empty(t, clock.Sleeps(), "the burst allowance")
	require.NoError(t, p.Wait(ctx, "h"))
	assert.Equal(t, []time.Duration{time.Second}, clock.Sleeps(), "one a second")

	// A deadline the wait would cross: a PaceError at once.
	dctx := deadlineCtx{ctx, clock.Now().Add(100 * time.Millisecond)}
	var pe *PaceError
	require.True(t, errors.As(p.Wait(dctx, "h"), &pe))
	assert.Equal(t, PaceQuota, pe.Reason)
	assert.Equal(t, time.Second, pe.Wait)

	// A 503 with Retry-After and no fields holds the host.
	p.Learn("g", nil, 503, 2*time.Second, true, clock.Now())
	dctx = deadlineCtx{ctx, clock.Now().Add(time.Second)}
	require.True(t, errors.As(p.Wait(dctx, "g"), &pe))
	assert.Equal(t, PaceRetryAfter, pe.Reason)

	_, err = NewPacer(PacingConfig{BurstFraction: 2}, nil)
	assert.ErrorIs(t, err, ErrInvalidConfig)
}

// deadlineCtx has a deadline on the fake clock's time, which never passes
// in real time.
type deadlineCtx struct {
	context.Context
	at time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.at, true }
