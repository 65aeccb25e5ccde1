package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Transport is an [http.RoundTripper] that paces, circuit-breaks and retries
// requests. Build it with [NewTransport]; it is safe for concurrent use, and
// meant to be shared: its retry budget, breakers and pacing state are per
// transport.
//
// What RoundTrip returns:
//
//   - a response that needs no retry, or could not be retried, as is;
//   - when retries stop on a retryable HTTP status (attempts, budget,
//     deadline, Retry-After or breaker), the last response as is, with a nil
//     error and its body unread, exactly as net/http would have returned it;
//     the caller closes it as usual;
//   - when retries stop on a transport error, a [*RetryError] wrapping the
//     last error and the reason;
//   - a [*CircuitOpenError] when the host's breaker rejects an attempt: before
//     the first, or when other requests opened it during a wait;
//   - the context's error when it is cancelled, including mid-wait.
//
// Responses that are retried are drained (up to 64 KiB) and closed.
type Transport struct {
	base          http.RoundTripper
	backoff       Backoff
	maxAttempts   int
	deadline      time.Duration
	maxRetryAfter time.Duration
	retryStatus   statusSet
	idemHeaders   []string
	maxBody       int64
	clock         core.Clock
	hooks         Hooks
	rng           *lockedRand
	budget        *RetryBudget
	breakers      *breakerSet
	pacer         *pacer
	throttle      *throttle // nil unless WithAdaptiveThrottle
	slots         *inflight // with pacing: the hosts' published concurrency
}

// Default retry parameters, beside [DefaultBackoffBase] and
// [DefaultBackoffCap].
const (
	DefaultMaxAttempts   = 4
	DefaultDeadline      = 15 * time.Second
	DefaultMaxRetryAfter = 30 * time.Second
	DefaultMaxBodyBuffer = 1 << 20
)

// maxDrain bounds how much of a discarded body is read to keep its
// connection; past that, closing the connection is cheaper.
const maxDrain = 64 << 10

// NewTransport returns a Transport over base (nil means
// [http.DefaultTransport]). Without options it retries 408, 429 and 503
// answers and transient errors of idempotent requests, at most 4 attempts
// within 15s, with full-jitter backoff from 200ms capped at 5s; it honours
// Retry-After up to 30s, holds retries to a gRPC-style budget (10 tokens,
// ratio 0.1), breaks per host after 5 consecutive failures for 10s, and
// paces on rate-limit fields:
//
//	t, err := client.NewTransport(nil)
//	if err != nil {
//		return err
//	}
//	hc := &http.Client{Transport: t}
//
// An option given a bad value (WithMaxAttempts(0), a negative duration, a
// config field out of range, a nil option) is reported as an error wrapping
// [ErrInvalidConfig], all of them at once; nothing is clamped.
func NewTransport(base http.RoundTripper, opts ...Option) (*Transport, error) {
	c := defaultConfig()
	var errs []error
	for i, o := range opts {
		if o == nil {
			errs = append(errs, invalid("option %d of NewTransport is nil", i))
			continue
		}
		if err := o(&c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{
		base:          base,
		backoff:       c.backoff.withDefaults(),
		maxAttempts:   c.maxAttempts,
		deadline:      c.deadline,
		maxRetryAfter: c.maxRetryAfter,
		maxBody:       c.maxBody,
		clock:         c.clock,
		hooks:         c.hooks,
		rng:           newLockedRand(c.rand),
		budget:        c.budget,
	}
	for _, code := range c.retryStatus {
		t.retryStatus.add(code)
	}
	for _, h := range c.idemHeaders {
		t.idemHeaders = append(t.idemHeaders, http.CanonicalHeaderKey(h))
	}
	if c.breakerOn {
		if c.breaker.Clock == nil {
			c.breaker.Clock = c.clock
		}
		t.breakers = newBreakerSet(c.breaker.withDefaults())
	}
	if c.pacingOn {
		t.pacer = newPacer(c.pacing.withDefaults())
		t.slots = newInflight(t.pacer.cfg.MaxHosts)
	}
	if c.throttleOn {
		t.throttle = newThrottle(c.throttle.withDefaults())
	}
	return t, nil
}

// RoundTrip implements [http.RoundTripper].
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	host, err := hostKey(req)
	if err != nil {
		closeRequestBody(req)
		return nil, err
	}
	start := t.clock.Now()
	areq, replayable, err := t.prepare(req)
	if err != nil {
		return nil, err
	}
	var prevDelay time.Duration
	for attempt := 1; ; attempt++ {
		a := t.send(ctx, req, areq, host, start)
		v := t.judge(ctx, a)
		if !v.retryable || !replayable {
			return a.resp, a.err
		}
		giveUp := func(cause error) (*http.Response, error) {
			return t.giveUp(req, attempt, v, a, cause)
		}
		delay, cause := t.retryDelay(ctx, host, start, attempt, prevDelay, a)
		if cause != nil {
			return giveUp(cause)
		}
		next, err := nextAttempt(areq)
		if err != nil {
			return giveUp(err)
		}
		if t.hooks.OnRetry != nil {
			t.hooks.OnRetry(RetryEvent{Request: req, Attempt: attempt, Reason: v.reason,
				StatusCode: statusOf(a.resp), Err: a.err, RetryAfter: a.retryAfter, Delay: delay})
		}
		discard(a.resp)
		if err := sleep(ctx, t.clock, delay); err != nil {
			closeRequestBody(next)
			return nil, err
		}
		areq, prevDelay = next, delay
	}
}

// CloseIdleConnections forwards to the base transport when it supports it,
// so that [http.Client.CloseIdleConnections] works through the Transport.
func (t *Transport) CloseIdleConnections() { closeIdle(t.base) }

// noLimit is a wait limit that never binds.
const noLimit = time.Duration(math.MaxInt64)

// waitLimit returns how long a request started at start may still wait at
// now: until the transport's deadline or the context's, whichever comes
// first. A wait longer than that is not started, since it could only end
// in a deadline error. The context's deadline is in real time, as contexts
// are.
func (t *Transport) waitLimit(ctx context.Context, start, now time.Time) time.Duration {
	limit := noLimit
	if t.deadline > 0 {
		limit = start.Add(t.deadline).Sub(now)
	}
	if dl, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(dl))
	}
	return limit
}

// attemptResult is one attempt's outcome.
type attemptResult struct {
	resp       *http.Response
	err        error
	retryAfter time.Duration
	hasRA      bool
}

// send makes one attempt: breaker admission, pacing, the base transport,
// then reporting to the breaker and the pacer. A paced wait that would
// cross a deadline (see waitLimit), or last beyond PacingConfig.MaxDelay,
// fails the attempt with a *PaceError before anything is sent.
func (t *Transport) send(ctx context.Context, orig, areq *http.Request, host string, start time.Time) attemptResult {
	var permit BreakerPermit
	if t.breakers != nil {
		p, err := t.breakers.get(host).Allow()
		if err != nil {
			closeRequestBody(areq)
			return attemptResult{err: err}
		}
		permit = p
	}
	release, err := t.slot(ctx, host, start)
	if err == nil {
		if err = t.gate(ctx, orig, host, start); err != nil {
			release()
		}
	}
	if err != nil {
		permit.Done(core.Ignored)
		closeRequestBody(areq)
		return attemptResult{err: err}
	}
	a := attemptResult{}
	sent := t.clock.Now()
	a.resp, a.err = roundTrip(t.base, areq)
	release()
	now := t.clock.Now()
	a.retryAfter, a.hasRA = retryAfterOf(a.resp, now)
	if t.breakers != nil {
		t.breakers.report(ctx, permit, a.resp, a.err, a.retryAfter, a.hasRA)
	}
	t.learn(ctx, host, a, sent, now)
	return a
}

// verdict is the retry layer's view of an attempt.
type verdict struct {
	retryable bool
	reason    string
}

// judge decides whether an attempt's outcome is worth a retry, and feeds the
// retry budget: retryable failures take a token, proper answers give some
// back, cancellations and breaker rejections do neither.
func (t *Transport) judge(ctx context.Context, a attemptResult) verdict {
	if a.err != nil {
		if ctx.Err() != nil || errors.Is(a.err, ErrCircuitOpen) {
			return verdict{}
		}
		reason, ok := transientReason(a.err)
		if ok && t.budget != nil {
			t.budget.Failure()
		}
		return verdict{retryable: ok, reason: reason}
	}
	if t.retryStatus.has(a.resp.StatusCode) {
		if t.budget != nil {
			t.budget.Failure()
		}
		return verdict{retryable: true, reason: statusReason(a.resp.StatusCode)}
	}
	if t.budget != nil {
		t.budget.Success()
	}
	return verdict{}
}

func (t *Transport) giveUp(req *http.Request, attempt int, v verdict, a attemptResult, cause error) (*http.Response, error) {
	if t.hooks.OnGiveUp != nil {
		t.hooks.OnGiveUp(GiveUpEvent{Request: req, Attempt: attempt, Reason: v.reason,
			StatusCode: statusOf(a.resp), Err: a.err, Cause: cause})
	}
	if a.resp != nil {
		return a.resp, nil
	}
	return nil, &RetryError{Attempts: attempt, Reason: cause, Err: a.err}
}

// prepare returns the request for the first attempt and whether later
// attempts can be made: the method must be idempotent (or the request carry
// an idempotency key), and the body replayable. A body without GetBody is
// buffered when it is at most maxBody bytes; a longer one is streamed as is
// and the request is not retried. Memory use is bounded either way.
func (t *Transport) prepare(req *http.Request) (*http.Request, bool, error) {
	if t.maxAttempts <= 1 || !t.idempotent(req) {
		return req, false, nil
	}
	if req.Body == nil || req.Body == http.NoBody || req.GetBody != nil {
		return req, true, nil
	}
	if req.ContentLength > t.maxBody {
		return req, false, nil
	}
	var buf bytes.Buffer
	if req.ContentLength > 0 {
		buf.Grow(int(req.ContentLength))
	}
	_, err := buf.ReadFrom(io.LimitReader(req.Body, t.maxBody+1))
	if err != nil {
		_ = req.Body.Close()
		return nil, false, fmt.Errorf("client: reading request body: %w", err)
	}
	r := new(http.Request)
	*r = *req // RoundTrip must not modify the caller's request
	if int64(buf.Len()) > t.maxBody {
		// Too long to keep: send what was read followed by the rest.
		r.Body = readCloser{io.MultiReader(bytes.NewReader(buf.Bytes()), req.Body), req.Body}
		return r, false, nil
	}
	_ = req.Body.Close()
	data := buf.Bytes()
	r.ContentLength = int64(len(data))
	r.GetBody = func() (io.ReadCloser, error) {
		if len(data) == 0 {
			return http.NoBody, nil
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	r.Body, _ = r.GetBody()
	return r, true, nil
}

// idempotent reports whether a request may be sent twice.
func (t *Transport) idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	for _, h := range t.idemHeaders {
		if v := req.Header[h]; len(v) > 0 && v[0] != "" {
			return true
		}
	}
	return false
}

// nextAttempt returns a copy of req with a fresh body.
func nextAttempt(req *http.Request) (*http.Request, error) {
	r := new(http.Request)
	*r = *req
	if req.Body == nil || req.Body == http.NoBody {
		return r, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("client: replaying request body: %w", err)
	}
	r.Body = body
	return r, nil
}

// discard drains (a bounded amount of) a response body and closes it, so
// that the connection goes back to the pool.
func discard(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
	_ = resp.Body.Close()
}

func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

type readCloser struct {
	io.Reader
	io.Closer
}
