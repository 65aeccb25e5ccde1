package client

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/sluice-go/sluice/fields"
)

// gate is the per-host decision an attempt passes after the breaker let
// it: pacing, then the adaptive throttle. It either returns once the
// attempt may go (having waited its paced turn), or fails it at once with
// a *PaceError, before anything is sent and without spending a slot of the
// schedule, or with the context's error if it ends during the wait. The
// retry layer adds the retry budget and the Retry-After floor for retries
// (see RoundTrip): one decision, whose parts never undo each other's
// accounting.
func (t *Transport) gate(ctx context.Context, req *http.Request, host string, start time.Time) error {
	now := t.clock.Now()
	info, err := t.admit(host, now, t.waitLimit(ctx, start, now))
	if err != nil || info.delay <= 0 {
		return err
	}
	if t.hooks.OnPace != nil {
		t.hooks.OnPace(PaceEvent{Request: req, Host: host, Reason: info.reason, Policy: info.policy,
			Remaining: info.remaining, Reset: info.reset, Rate: info.rate, Delay: info.delay})
	}
	return sleep(ctx, t.clock, info.delay)
}

// admit is gate's decision at now, without the wait: the paced delay, or
// the *PaceError that fails the attempt. limit is the longest wait the
// request can make.
func (t *Transport) admit(host string, now time.Time, limit time.Duration) (paceInfo, error) {
	var veto func() bool
	if t.throttle != nil {
		// The throttle judges only attempts pacing would send: counting
		// the ones pacing refuses as its own rejections would make it
		// reject ever more of the few that pacing lets through.
		veto = func() bool { return t.throttle.reject(host, now, t.rng.float64()) }
	}
	if t.pacer == nil {
		if veto != nil && veto() {
			return paceInfo{}, &PaceError{Host: host, Reason: PaceThrottled}
		}
		return paceInfo{}, nil
	}
	info := t.pacer.reserve(host, now, limit, veto)
	if info.refused {
		return info, &PaceError{Host: host, Reason: info.reason, Policy: info.policy, Wait: info.delay}
	}
	return info, nil
}

// learn records what an attempt's answer, sent at sent and answered at
// now, says of its host: its limits for pacing, whether it accepted the
// request for the adaptive throttle. (The breaker has its own report.)
func (t *Transport) learn(ctx context.Context, host string, a attemptResult, sent, now time.Time) {
	if t.pacer != nil && a.resp != nil {
		var buf [fields.MaxItems]fields.Status
		qs := fields.Append(buf[:0], a.resp.Header, now)
		t.slots.publish(host, qs, now)
		t.pacer.apply(host, qs, a.resp.StatusCode, a.retryAfter, a.hasRA, sent, now)
	}
	if t.throttle != nil && ctx.Err() == nil {
		t.throttle.answered(host, now, a.err == nil && accepted(a.resp.StatusCode))
	}
}

// retryDelay decides whether a retryable attempt, the attempt-th of a
// request started at start, is retried, and after what wait: the backoff,
// floored by the answer's Retry-After (with a little jitter on top, so that
// everyone told "come back at 12:00" does not come back at once). cause is
// why not: attempts, a Retry-After past the cap, the breaker, the retry
// budget or the deadline.
func (t *Transport) retryDelay(ctx context.Context, host string, start time.Time, attempt int, prev time.Duration, a attemptResult) (time.Duration, error) {
	if attempt >= t.maxAttempts {
		return 0, ErrMaxAttempts
	}
	if a.hasRA && t.maxRetryAfter > 0 && a.retryAfter > t.maxRetryAfter {
		return 0, ErrRetryAfterTooLong
	}
	delay := t.rng.delay(t.backoff, attempt-1, prev)
	if a.hasRA {
		delay = max(delay, a.retryAfter) + t.rng.uniform(max(t.backoff.Base, a.retryAfter/10))
	}
	now := t.clock.Now()
	if t.breakers != nil {
		// Our own failures may just have opened the host's breaker:
		// waking up to an immediate rejection is no retry at all.
		if at := t.breakers.get(host).retryAt(); at.After(now.Add(delay)) {
			return 0, ErrCircuitOpen
		}
	}
	if t.budget != nil && !t.budget.CanRetry() {
		return 0, ErrRetryBudget
	}
	if delay > t.waitLimit(ctx, start, now) {
		return 0, ErrDeadline
	}
	return delay, nil
}

// slot takes a slot under host's published concurrency quota, waiting as
// long as pacing would, and returns its release.
func (t *Transport) slot(ctx context.Context, host string, start time.Time) (func(), error) {
	if t.slots == nil {
		return func() {}, nil
	}
	now := t.clock.Now()
	longest := min(t.pacer.cfg.MaxDelay, t.waitLimit(ctx, start, now))
	release, err := t.slots.acquire(ctx, host, now, func(ctx context.Context) error { return sleep(ctx, t.clock, longest) })
	if errors.Is(err, errNoSlot) && ctx.Err() == nil {
		return nil, &PaceError{Host: host, Reason: PaceConcurrency, Wait: longest}
	}
	return release, err
}
