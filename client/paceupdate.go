package client

import (
	"cmp"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/sluice-go/sluice/fields"
)

// update records what a response from host, to a request sent at sent,
// says of the host's limits.
func (p *pacer) update(host string, resp *http.Response, retryAfter time.Duration, hasRetryAfter bool, sent, now time.Time) {
	var buf [fields.MaxItems]fields.Status
	p.apply(host, fields.Append(buf[:0], resp.Header, now), resp.StatusCode, retryAfter, hasRetryAfter, sent, now)
}

// apply is update with the response's quotas read: qs, which it may
// reorder.
func (p *pacer) apply(host string, qs []fields.Status, code int, retryAfter time.Duration, hasRetryAfter bool, sent, now time.Time) {
	qs = mostRestrictive(rateQuotas(qs))
	a := readAnswer(code, len(qs) > 0, retryAfter, hasRetryAfter)
	if len(qs) == 0 && !a.throttled && !a.hold {
		p.count(host, code, sent, now)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.hosts.get(host, now, func() *paceHost { return new(paceHost) })
	if p.learn(h, a, code, sent, now) {
		p.learning.Store(true)
	}
	if len(qs) == 0 && !a.hold {
		return // a 429 without Retry-After: the learned rate is all there is
	}
	*h = h.renewed(qs, a, p.cfg.BurstFraction, now)
}

// limitAnswer is what a response without rate-limit fields may still say.
type limitAnswer struct {
	// throttled: a 429 without fields, which teaches the learned rate.
	throttled bool
	// hold: a 429 or 503 with Retry-After and no fields, which holds the
	// host for retryAfter.
	hold       bool
	retryAfter time.Duration
}

func readAnswer(code int, hasFields bool, retryAfter time.Duration, hasRetryAfter bool) limitAnswer {
	limited := code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
	a := limitAnswer{throttled: code == http.StatusTooManyRequests && !hasFields}
	a.hold = !hasFields && limited && hasRetryAfter && retryAfter > 0 && retryAfter <= fields.MaxReset
	if a.hold {
		a.retryAfter = retryAfter
	}
	return a
}

// rateQuotas drops the quotas of concurrent requests from qs, in place:
// they say nothing of a rate.
func rateQuotas(qs []fields.Status) []fields.Status {
	return slices.DeleteFunc(qs, func(q fields.Status) bool { return q.Concurrent })
}

// mostRestrictive keeps the maxPacedPolicies most restrictive quotas: the
// fewest units per second left.
func mostRestrictive(qs []fields.Status) []fields.Status {
	if len(qs) > maxPacedPolicies {
		slices.SortFunc(qs, moreRestrictive)
		qs = qs[:maxPacedPolicies]
	}
	return qs
}

// count counts an answer that says nothing of the limits for the learned
// rate of its host, if it has one: until a host has one, such an answer
// takes no lock.
func (p *pacer) count(host string, code int, sent, now time.Time) {
	if !p.learning.Load() || !accepted(code) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.hosts.lookup(host, now); ok && h.learned != nil {
		h.learned.answered(sent)
	}
}

// learn feeds an answer to h's learned rate, and reports whether it
// started one.
func (p *pacer) learn(h *paceHost, a limitAnswer, code int, sent, now time.Time) bool {
	switch {
	case a.throttled && h.learned == nil:
		h.learned = newSendRate(now, a.retryAfter)
		return true
	case a.throttled:
		h.learned.throttled(sent, now, a.retryAfter)
	case h.learned != nil && accepted(code):
		h.learned.answered(sent)
	}
	return false
}

// renewed returns h's state once a response reported quotas qs, or held
// the host (a.hold): the policies are replaced, the slots already promised
// to attempts in flight kept.
func (h *paceHost) renewed(qs []fields.Status, a limitAnswer, burstFraction float64, now time.Time) paceHost {
	fresh := paceHost{learned: h.learned}
	if a.hold {
		until := now.Add(a.retryAfter)
		fresh.policies[0] = pacePolicy{reason: PaceRetryAfter, resetAt: until, until: until}
		fresh.n = 1
	}
	for _, q := range qs {
		pol := newPacePolicy(q, burstFraction, now)
		for i := range h.policies[:h.n] {
			if old := &h.policies[i]; old.reason == PaceQuota && old.name == q.Policy {
				pol.next = old.next
			}
		}
		fresh.policies[fresh.n] = pol
		fresh.n++
	}
	return fresh
}

// newPacePolicy is the schedule of a quota reported at now.
func newPacePolicy(q fields.Status, burstFraction float64, now time.Time) pacePolicy {
	pol := pacePolicy{
		name:      q.Policy,
		remaining: q.Remaining,
		resetAt:   now.Add(q.Reset),
		until:     now.Add(max(q.Reset, q.Window)),
	}
	// The burst allowance: burstFraction of the quota, at least one
	// request, as a time. (burst-1) slots are at most burstFraction of the
	// window or of the time to the reset, so nothing overflows.
	base := q.Remaining
	if q.Limit > 0 && q.Window > 0 {
		pol.interval, pol.sustained = max(q.Window/time.Duration(q.Limit), 1), true
		base = q.Limit
	} else if q.Remaining > 0 {
		pol.interval = q.Reset / time.Duration(q.Remaining)
	}
	burst := max(1, int64(math.Ceil(burstFraction*float64(base))))
	pol.tolerance = time.Duration(burst-1) * pol.interval
	return pol
}

// accepted reports whether an answer shows the host accepted the request:
// neither a 429 nor a server failure.
func accepted(code int) bool {
	return code != http.StatusTooManyRequests && code < 500
}

// moreRestrictive orders quotas most restrictive first: exhausted ones by
// the longest reset, then the others by the fewest units per second left.
func moreRestrictive(a, b fields.Status) int {
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
