package client

import (
	"cmp"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// PacingConfig tunes pacing. Zero fields take defaults; a value out of its
// stated range makes [WithPacing] fail.
type PacingConfig struct {
	// BurstFraction is the share of a policy's quota that may go back to
	// back before requests are spaced out, at least one request: in [0, 1],
	// default 0.1.
	BurstFraction float64
	// MaxDelay bounds a paced wait (default 15s; not negative). An attempt
	// whose wait would be longer, or cross its deadline, fails at once with
	// a [*PaceError], unsent and taking no slot of the schedule.
	MaxDelay time.Duration
	// MaxHosts bounds the number of hosts remembered. Default 1024; not
	// negative.
	MaxHosts int
}

// Default pacing parameters.
const (
	DefaultPacingBurstFraction = 0.1
	DefaultMaxPacedDelay       = 15 * time.Second
)

// validate reports every field out of its range, each error wrapping
// ErrInvalidConfig.
func (c PacingConfig) validate() error {
	var errs []error
	if !(c.BurstFraction >= 0 && c.BurstFraction <= 1) { // NaN too
		errs = append(errs, invalid("PacingConfig.BurstFraction %v is not in [0, 1]", c.BurstFraction))
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
	c.BurstFraction = cmp.Or(c.BurstFraction, DefaultPacingBurstFraction)
	c.MaxDelay = cmp.Or(c.MaxDelay, DefaultMaxPacedDelay)
	c.MaxHosts = cmp.Or(c.MaxHosts, DefaultMaxHosts)
	return c
}

// PaceReason says what imposed a pacing wait.
type PaceReason int

const (
	// PaceQuota is a wait for a quota the server reported in rate-limit
	// fields.
	PaceQuota PaceReason = iota
	// PaceRetryAfter is a wait for the end of a Retry-After that came
	// with a 429 or 503 and no rate-limit fields: the host is held until
	// then, so that concurrent requests do not race into the same answer.
	PaceRetryAfter
	// PaceLearnedRate is a wait for the send rate learned from 429s that
	// carried no rate-limit fields.
	PaceLearnedRate
	// PaceThrottled is a request the adaptive throttle rejected (see
	// [ThrottleConfig]); it never waits.
	PaceThrottled
	// PaceConcurrency is a wait for a slot under the host's published
	// quota of concurrent requests (see [fields.Status.Concurrent]).
	PaceConcurrency
)

// String returns "quota", "retry-after", "learned rate", "throttled" or
// "concurrency".
func (r PaceReason) String() string {
	switch r {
	case PaceQuota:
		return "quota"
	case PaceRetryAfter:
		return "retry-after"
	case PaceLearnedRate:
		return "learned rate"
	case PaceThrottled:
		return "throttled"
	case PaceConcurrency:
		return "concurrency"
	}
	return fmt.Sprintf("PaceReason(%d)", int(r))
}

// pacer remembers, per host, what the server said of its limits, and turns
// it into waits before the next attempts, so that they neither burst the
// whole allowance and then stall nor race into a 429.
//
// For each policy a host reports, it keeps the units remaining (as
// reported, minus what was sent since) until the reset, and a schedule (a
// GCRA: a token bucket kept as one timestamp) that lets BurstFraction of
// the quota go back to back and spaces the rest
//
//   - at the policy's sustained rate q/w, when RateLimit-Policy gives its
//     quota q and window w. A client that keeps to it never runs a token
//     bucket dry, nor a window before its end;
//   - otherwise (the older fields give no window) over the time left: the
//     r units left over the t seconds to the reset. Paced so, a window
//     lasts to its end, and a bucket that reports its time to full settles
//     at half full, at its sustained rate.
//
// When the units remaining run out, the policy waits for its reset,
// whatever the schedule: the server said so. Each attempt waits for the
// most restrictive policy, and every policy counts it as sent.
//
// A 429 or 503 with Retry-After but no rate-limit fields holds the host
// until then; a 429 without fields also teaches the host's send rate (see
// sendRate), which spaces later attempts.
type pacer struct {
	cfg   PacingConfig
	mu    sync.Mutex
	hosts *hostTable[*paceHost]
	// learning is set once a host has a learned rate: until then an answer
	// without fields has nothing to update, and takes no lock.
	learning atomic.Bool
}

// maxPacedPolicies is how many policies per host are tracked; a server
// reporting more gets its most restrictive ones tracked.
const maxPacedPolicies = 4

type paceHost struct {
	n        int
	policies [maxPacedPolicies]pacePolicy
	learned  *sendRate // nil until a 429 without fields
}

type pacePolicy struct {
	name      string
	reason    PaceReason
	remaining int64
	resetAt   time.Time
	// interval spaces requests: at the sustained rate, or, until resetAt
	// only, at the rate that spends the units remaining by then.
	interval  time.Duration
	sustained bool
	// tolerance is how early a request may go: the burst allowance, as
	// (burst-1) slots when it was reported.
	tolerance time.Duration
	next      time.Time // the schedule's next slot (GCRA's theoretical arrival time)
	until     time.Time // when the policy is forgotten
}

// newPacer takes a validated config with defaults.
func newPacer(cfg PacingConfig) *pacer {
	return &pacer{cfg: cfg, hosts: newHostTable(cfg.MaxHosts, func(h *paceHost, now time.Time) bool {
		return h.expired(now)
	})}
}

func (h *paceHost) expired(now time.Time) bool {
	for i := range h.policies[:h.n] {
		if now.Before(h.policies[i].until) {
			return false
		}
	}
	return h.learned == nil || h.learned.expired(now)
}

// paceInfo describes a wait for the OnPace hook.
type paceInfo struct {
	delay     time.Duration
	reason    PaceReason
	policy    string
	remaining int64
	reset     time.Duration
	rate      float64
	// refused is set when the wait would be longer than MaxDelay or the
	// request's limit: the attempt is not sent, and takes no slot.
	refused bool
}

// reserve returns how long an attempt to host must wait, and counts the
// attempt against the host's quotas. A wait longer than limit, or than
// MaxDelay, is refused and counts nothing: the schedule stays where the
// attempts actually sent left it, so that pacing resumes as soon as they
// have gone.
//
// veto, if not nil, is asked (under the pacer's lock) about an attempt
// that may go, before it takes its slot: one it vetoes is refused too,
// with the reason PaceThrottled.
func (p *pacer) reserve(host string, now time.Time, limit time.Duration, veto func() bool) paceInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.hosts.lookup(host, now)
	if !ok {
		if veto != nil && veto() {
			return paceInfo{reason: PaceThrottled, refused: true}
		}
		return paceInfo{}
	}
	info := h.wait(now)
	if info.delay > min(p.cfg.MaxDelay, limit) {
		info.refused = true // see PacingConfig.MaxDelay
		return info
	}
	if veto != nil && veto() {
		return paceInfo{reason: PaceThrottled, refused: true}
	}
	send := now.Add(info.delay)
	for i := range h.policies[:h.n] {
		if pol := &h.policies[i]; now.Before(pol.until) {
			pol.take(send)
		}
	}
	if h.learned != nil {
		h.learned.take(send)
	}
	return info
}

// wait returns the longest wait a request that would go at now has to
// make for any of the host's policies and its learned rate.
func (h *paceHost) wait(now time.Time) paceInfo {
	var info paceInfo
	for i := range h.policies[:h.n] {
		pol := &h.policies[i]
		if !now.Before(pol.until) {
			continue
		}
		if d, rate := pol.wait(now); d > info.delay {
			info = paceInfo{delay: d, reason: pol.reason, policy: pol.name, remaining: pol.remaining,
				reset: max(pol.resetAt.Sub(now), 0), rate: rate}
		}
	}
	if h.learned != nil && h.learned.expired(now) {
		h.learned = nil
	}
	if h.learned != nil {
		if d := h.learned.wait(now); d > info.delay {
			info = paceInfo{delay: d, reason: PaceLearnedRate, rate: h.learned.rate(now)}
		}
	}
	return info
}

// wait returns how long a request that would go at now must wait for the
// policy, and the rate its schedule spaces requests at (0 for a wait for
// the reset).
func (pol *pacePolicy) wait(now time.Time) (time.Duration, float64) {
	var reset time.Duration
	if now.Before(pol.resetAt) && pol.remaining <= 0 {
		reset = pol.resetAt.Sub(now)
	}
	interval := pol.spacing(now)
	if interval <= 0 {
		return reset, 0
	}
	// GCRA: a request may go once it is no more than tolerance early; and
	// not before the reset, when nothing remains, whatever the schedule
	// says: then the schedule goes on from there, rather than every
	// request held for the reset going at once.
	if d := max(pol.next.Add(-pol.tolerance).Sub(now), 0); d > reset {
		return d, float64(time.Second) / float64(interval)
	}
	return reset, 0
}

// spacing returns the time between two requests at now, 0 when nothing is
// known (a policy without a window, past its reset).
func (pol *pacePolicy) spacing(now time.Time) time.Duration {
	if pol.sustained || now.Before(pol.resetAt) {
		return pol.interval
	}
	return 0
}

// take counts a request sent at send.
func (pol *pacePolicy) take(send time.Time) {
	if interval := pol.spacing(send); interval > 0 {
		pol.next = laterOf(pol.next, send).Add(interval)
	}
	if send.Before(pol.resetAt) && pol.remaining > 0 {
		pol.remaining--
	}
}
