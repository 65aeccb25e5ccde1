package client

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

type capacityWant struct {
	rate   float64
	closed time.Duration
	reason string
}

func capacityAt(d *HostCapacity, now time.Time) capacityWant {
	r, c, why := d.Capacity(now)
	return capacityWant{r, c, why}
}

// What a HostCapacity reports, from each thing the transport learns.
func TestHostCapacityFromEverySignal(t *testing.T) {
	clk := newFakeClock()
	tr := newTransport(t, nil, WithClock(clk), WithAdaptiveThrottle(ThrottleConfig{}))
	dep := tr.HostCapacity("H")
	assert.Equal(t, capacityWant{}, capacityAt(dep, epoch), "nothing known")

	// A quota: its sustained rate.
	tr.pacer.update("h", resp(200, "RateLimit-Policy", `"p";q=50;w=1`, "RateLimit", `"p";r=40;t=1`), 0, false, epoch, epoch)
	assert.Equal(t, capacityWant{rate: 50, reason: "quota"}, capacityAt(dep, epoch))
	// Spent: closed until the reset.
	tr.pacer.update("h", resp(429, "RateLimit-Policy", `"p";q=50;w=1`, "RateLimit", `"p";r=0;t=1`), time.Second, true, epoch, epoch)
	assert.Equal(t, capacityWant{rate: 0, closed: time.Second, reason: "quota"}, capacityAt(dep, epoch))

	// A Retry-After without fields: closed for it; then the rate learned
	// from the 429.
	tr.pacer.update("g", resp(429), 2*time.Second, true, epoch, epoch)
	g := tr.HostCapacity("g")
	assert.Equal(t, capacityWant{rate: 0.5, closed: 2 * time.Second, reason: "retry-after"}, capacityAt(g, epoch), "the learned rate starts at one per Retry-After")
	c := capacityAt(g, epoch.Add(2*time.Second))
	assert.Equal(t, "learned rate", c.reason)
	assert.InDelta(t, 2.0, c.rate, 1e-9)

	// A backlog: more than a quarter second of pacing ahead closes it.
	tr.pacer.update("b", resp(200, "RateLimit-Policy", `"p";q=10;w=1`, "RateLimit", `"p";r=10;t=1`), 0, false, epoch, epoch)
	for range 5 {
		tr.pacer.reserve("b", epoch, noLimit, nil)
	}
	c = capacityAt(tr.HostCapacity("b"), epoch)
	assert.Equal(t, "quota", c.reason)
	assert.Equal(t, 500*time.Millisecond, c.closed, "five sent at 10/s: the next slot is 500ms away")

	// The throttle rejecting: the accepted rate.
	for i := range 10 {
		tr.throttle.answered("t", epoch, i < 2)
	}
	assert.Equal(t, capacityWant{rate: 2, reason: "throttled"}, capacityAt(tr.HostCapacity("t"), epoch))

	// An open breaker: closed until it half-opens.
	b := tr.breakers.get("x")
	for range DefaultBreakerConsecutiveFailures {
		p, err := b.Allow()
		require.NoError(t, err)
		p.Done(core.Failed)
	}
	_, err := b.Allow()
	require.True(t, errors.Is(err, ErrCircuitOpen))
	assert.Equal(t, capacityWant{closed: DefaultBreakerOpenTimeout, reason: "breaker open"}, capacityAt(tr.HostCapacity("x"), clk.Now()))
}
