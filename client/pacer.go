package client

import (
	"cmp"
	"errors"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"
)

// PacingConfig tunes how requests are spread when a host's quota runs low.
// Zero fields take defaults; a value out of its stated range makes
// [WithPacing] fail.
type PacingConfig struct {
	// LowFraction and LowUnits define "low": pacing starts once remaining <=
	// max(LowUnits, ceil(LowFraction × limit)). When the server does not
	// report the limit, only LowUnits applies. Defaults 0.1 and 1;
	// LowFraction is at most 1, neither is negative.
	LowFraction float64
	LowUnits    int64
	// MaxDelay bounds a paced wait. When the computed wait is longer, the
	// request is sent at once and the server's answer (typically a 429 with
	// Retry-After, which the retry layer honours or surfaces) decides:
	// pacing is advice, not a reason to hold a request for minutes.
	// Default 15s; not negative.
	MaxDelay time.Duration
	// MaxHosts bounds the number of hosts remembered. Default 1024; not
	// negative.
	MaxHosts int
}

// Default pacing parameters.
const (
	DefaultLowFraction   = 0.1
	DefaultLowUnits      = 1
	DefaultMaxPacedDelay = 15 * time.Second
)

// validate reports every field out of its range, each error wrapping
// ErrInvalidConfig.
func (c PacingConfig) validate() error {
	var errs []error
	if !(c.LowFraction >= 0 && c.LowFraction <= 1) { // NaN too
		errs = append(errs, invalid("PacingConfig.LowFraction %v is not in [0, 1]", c.LowFraction))
	}
	if c.LowUnits < 0 {
		errs = append(errs, invalid("PacingConfig.LowUnits %d is negative", c.LowUnits))
	}
	if c.MaxDelay < 0 {
		errs = append(errs, invalid("PacingConfig.MaxDelay %v is negative", c.MaxDelay))
	}
	if c.MaxHosts < 0 {
		errs = append(errs, invalid("PacingConfig.MaxHosts %d is negative", c.MaxHosts))
	}
	return errors.Join(errs...)
}

// withDefaults fills in zero fields of a validated config.
func (c PacingConfig) withDefaults() PacingConfig {
	c.LowFraction = cmp.Or(c.LowFraction, DefaultLowFraction)
	c.LowUnits = cmp.Or(c.LowUnits, DefaultLowUnits)
	c.MaxDelay = cmp.Or(c.MaxDelay, DefaultMaxPacedDelay)
	c.MaxHosts = cmp.Or(c.MaxHosts, DefaultMaxHosts)
	return c
}

// pacer remembers, per host, the quotas the server last reported and turns
// them into waits before the next attempts.
//
// For each policy of a host it keeps the remaining units R (as reported,
// minus what was sent since), when more quota arrives (resetAt), and the
// next free slot. Before an attempt, each policy asks for a wait:
//
//   - none once resetAt has passed (the window is over; the next answer
//     will tell us more) or while R is above the low mark;
//   - until resetAt when R is 0;
//   - otherwise until its next free slot. An attempt sent at time s takes a
//     unit and moves the slot to s + (resetAt - s) / R: the R units left are
//     spread evenly over the time left (delay ≈ reset/remaining) instead of
//     spent at once.
//
// The attempt waits for the largest of these (the most restrictive policy)
// and every policy counts it as sent. A 429 or 503 with Retry-After but no
// rate-limit fields holds the host until then, so that concurrent requests
// do not race into the same 429.
type pacer struct {
	cfg   PacingConfig
	mu    sync.Mutex
	hosts *hostTable[*paceHost]
}

// maxPacedPolicies is how many policies per host are tracked; a server
// reporting more gets its most restrictive ones tracked.
const maxPacedPolicies = 4

type paceHost struct {
	n        int
	policies [maxPacedPolicies]pacePolicy
}

type pacePolicy struct {
	name      string
	remaining int64
	low       int64
	resetAt   time.Time
	next      time.Time
}

// retryAfterPolicy names the synthetic policy derived from Retry-After. It
// cannot clash with a real name: NUL is not allowed in structured fields.
const retryAfterPolicy = "\x00retry-after"

// newPacer takes a validated config with defaults.
func newPacer(cfg PacingConfig) *pacer {
	return &pacer{cfg: cfg, hosts: newHostTable(cfg.MaxHosts, func(h *paceHost, now time.Time) bool {
		return h.expired(now)
	})}
}

func (h *paceHost) expired(now time.Time) bool {
	for i := range h.policies[:h.n] {
		if now.Before(h.policies[i].resetAt) {
			return false
		}
	}
	return true
}

// paceInfo describes a wait for the OnPace hook.
type paceInfo struct {
	delay     time.Duration
	remaining int64
	reset     time.Duration
	policy    string
}

// reserve returns how long an attempt to host must wait, and counts the
// attempt against the host's quotas. A wait longer than limit, or than
// MaxDelay, is not imposed: the attempt is sent at once.
func (p *pacer) reserve(host string, now time.Time, limit time.Duration) paceInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.hosts.lookup(host, now)
	if !ok {
		return paceInfo{}
	}
	var info paceInfo
	for i := range h.policies[:h.n] {
		pol := &h.policies[i]
		if !now.Before(pol.resetAt) || pol.remaining > pol.low {
			continue
		}
		var d time.Duration
		if pol.remaining <= 0 {
			d = pol.resetAt.Sub(now)
		} else if pol.next.After(now) {
			d = pol.next.Sub(now)
		}
		if d > info.delay {
			info = paceInfo{delay: d, remaining: pol.remaining, reset: pol.resetAt.Sub(now), policy: pol.name}
		}
	}
	if info.delay > min(p.cfg.MaxDelay, limit) {
		info.delay = 0 // see PacingConfig.MaxDelay
	}
	send := now.Add(info.delay)
	for i := range h.policies[:h.n] {
		pol := &h.policies[i]
		if !now.Before(pol.resetAt) || pol.remaining <= 0 {
			continue
		}
		if pol.remaining <= pol.low {
			pol.next = send.Add(pol.resetAt.Sub(send) / time.Duration(pol.remaining))
		}
		pol.remaining--
	}
	return info
}

// update records the quotas of a response from host. A response without
// rate-limit fields changes nothing, unless it is a 429/503 with a valid
// Retry-After.
func (p *pacer) update(host string, resp *http.Response, retryAfter time.Duration, hasRetryAfter bool, now time.Time) {
	var buf [maxQuotaItems]Quota
	qs := AppendRateLimit(buf[:0], resp.Header, now)
	if len(qs) == 0 {
		if !hasRetryAfter || retryAfter <= 0 || retryAfter > MaxQuotaReset ||
			(resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
			return
		}
		qs = append(qs, Quota{Policy: retryAfterPolicy, Reset: retryAfter})
	}
	if len(qs) > maxPacedPolicies {
		// Keep the most restrictive: the fewest units per second left.
		slices.SortFunc(qs, moreRestrictive)
		qs = qs[:maxPacedPolicies]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.hosts.get(host, now, func() *paceHost { return new(paceHost) })
	var fresh paceHost
	for _, q := range qs {
		pol := pacePolicy{
			name:      q.Policy,
			remaining: q.Remaining,
			low:       p.cfg.LowUnits,
			resetAt:   now.Add(q.Reset),
		}
		if q.Limit > 0 {
			pol.low = max(pol.low, int64(math.Ceil(float64(q.Limit)*p.cfg.LowFraction)))
		}
		// Keep the slots already promised to attempts in flight.
		for i := range h.policies[:h.n] {
			if old := &h.policies[i]; old.name == q.Policy && old.next.After(now) {
				pol.next = old.next
			}
		}
		fresh.policies[fresh.n] = pol
		fresh.n++
	}
	*h = fresh
}

// moreRestrictive orders quotas most restrictive first: exhausted ones by
// the longest reset, then the others by the fewest units per second left.
func moreRestrictive(a, b Quota) int {
	if ea, eb := a.Remaining <= 0, b.Remaining <= 0; ea != eb {
		if ea {
			return -1
		}
		return 1
	} else if ea {
		return cmp.Compare(b.Reset, a.Reset)
	}
	return cmp.Compare(b.Reset.Seconds()/float64(b.Remaining), a.Reset.Seconds()/float64(a.Remaining))
}
