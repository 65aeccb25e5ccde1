package client

import (
	"strings"
	"time"
)

// HostCapacity is what a [Transport] knows of one host's capacity, for a
// service whose handlers call that host: its admission can follow what the
// host will accept, instead of taking in requests the host will refuse
// (admit.Config.Dependencies consumes it). Get one with
// [Transport.HostCapacity]; it reads the transport's state at each call and
// is safe for concurrent use.
type HostCapacity struct {
	t    *Transport
	host string
}

// HostCapacity returns the view of host (host[:port], as in the request
// URLs: the key of the transport's per-host state).
func (t *Transport) HostCapacity(host string) *HostCapacity {
	return &HostCapacity{t: t, host: strings.ToLower(host)}
}

// Capacity reports, at now, the rate in requests per second the host is
// expected to accept (0: nothing known limits it), how long it accepts
// nothing at all (0: it accepts some now: a spent quota, a Retry-After, an
// open breaker or a pacer backlog over a quarter second close it), and why:
// "quota", "retry-after", "learned rate" (see [PaceReason]), "throttled",
// "breaker open", or "" when nothing limits it. The tightest limit wins.
func (d *HostCapacity) Capacity(now time.Time) (rate float64, closed time.Duration, reason string) {
	var c capacity
	if d.t.pacer != nil {
		c = d.t.pacer.capacity(d.host, now)
	}
	if d.t.throttle != nil {
		if r, ok := d.t.throttle.acceptedRate(d.host, now); ok && (c.rate == 0 || r < c.rate) && c.closed == 0 {
			c.rate, c.reason = r, "throttled"
		}
	}
	if d.t.breakers != nil {
		if b := d.t.breakers.lookup(d.host); b != nil {
			if at := b.retryAt(); at.After(now) && at.Sub(now) > c.closed {
				c.closed, c.reason = at.Sub(now), "breaker open"
			}
		}
	}
	return c.rate, c.closed, c.reason
}

// capacity is Capacity's answer.
type capacity struct {
	rate   float64
	closed time.Duration
	reason string
}

// backlogClose is the pacing wait past which Capacity reports a host
// closed.
const backlogClose = 250 * time.Millisecond

// capacity reads what the pacer knows of host at now.
func (p *pacer) capacity(host string, now time.Time) capacity {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.hosts.lookup(host, now)
	if !ok {
		return capacity{}
	}
	c := h.quotaCapacity(now)
	if h.learned != nil && !h.learned.expired(now) {
		c.tighten(h.learned.rate(now), PaceLearnedRate)
	}
	if w := h.wait(now); w.delay > backlogClose && w.delay > c.closed {
		c.closed, c.reason = w.delay, w.reason.String()
	}
	return c
}

// quotaCapacity reads the host's policies: the tightest rate, and the
// longest wait for a spent quota's reset or a Retry-After.
func (h *paceHost) quotaCapacity(now time.Time) capacity {
	var c capacity
	for i := range h.policies[:h.n] {
		pol := &h.policies[i]
		if !now.Before(pol.until) {
			continue
		}
		if now.Before(pol.resetAt) && pol.remaining <= 0 {
			if d := pol.resetAt.Sub(now); d > c.closed {
				c.closed, c.reason = d, pol.reason.String()
			}
			continue
		}
		if iv := pol.spacing(now); iv > 0 {
			c.tighten(float64(time.Second)/float64(iv), pol.reason)
		}
	}
	return c
}

// tighten lowers c's rate to r, for reason, if r is lower.
func (c *capacity) tighten(r float64, reason PaceReason) {
	if c.rate == 0 || r < c.rate {
		c.rate = r
		if c.closed == 0 {
			c.reason = reason.String()
		}
	}
}
