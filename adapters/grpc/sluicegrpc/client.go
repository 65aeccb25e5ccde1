package sluicegrpc

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/sluice/client"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/fields"
)

// ClientConfig configures the client interceptor NewClient builds; zero
// fields take the defaults of package client's Transport.
type ClientConfig struct {
	// Methods lists the methods safe to retry, as method patterns
	// ("/pkg.Service/Method", "/pkg.Service/*"): idempotent ones. Calls of
	// other methods are paced and guarded by the breaker, never retried.
	Methods []string
	// Codes are the codes retried: ResourceExhausted and Unavailable by
	// default. Only those and Aborted and DeadlineExceeded are accepted;
	// other codes would fail identically again.
	Codes []codes.Code
	// Backoff is the schedule between attempts, under the server's delay
	// (RetryInfo, push-back) as a floor.
	Backoff client.Backoff
	// MaxAttempts bounds the attempts of a call, the first included
	// (default 4).
	MaxAttempts int
	// MaxRetryAfter is the longest server delay waited for (default 30s):
	// a longer one ends the call's retries at once.
	MaxRetryAfter time.Duration
	// Budget bounds retries across calls (nil: a budget of its own, 10
	// tokens and a ratio of 0.1, as gRPC's retryThrottling).
	Budget *client.RetryBudget
	// Breaker guards the target (nil: a breaker of its own, with the zero
	// BreakerConfig): Unavailable, Internal, Unknown, DataLoss and
	// DeadlineExceeded count as failures.
	Breaker *client.Breaker
	// Pacer spaces the calls by the RateLimit metadata (nil: a pacer of
	// its own, with the zero PacingConfig).
	Pacer *client.Pacer
	// Clock is the time waits run on (default core.SystemClock).
	Clock core.Clock
	// Rand is the jitter's random source (default: seeded from
	// crypto/rand; a fixed one is for tests only).
	Rand rand.Source
}

// Client is a unary client interceptor that brings sluice's client to
// gRPC: see NewClient. Use one per target (ClientConn), with grpc-go's
// own retry policy off for the methods it retries.
type Client struct {
	methods       *methods
	codes         map[codes.Code]bool
	backoff       client.Backoff
	maxAttempts   int
	maxRetryAfter time.Duration
	budget        *client.RetryBudget
	breaker       *client.Breaker
	pacer         *client.Pacer
	clock         core.Clock
	mu            sync.Mutex // guards rng
	rng           *rand.Rand
}

// NewClient returns a client interceptor that paces calls by the quotas
// the server reports (RateLimit metadata), fails them at once while the
// target's breaker is open, and retries failed calls of Methods with one
// of Codes, with jittered backoff under the server's RetryInfo or
// push-back, within MaxAttempts, the retry budget and the call's deadline.
// A bad field is an error wrapping client.ErrInvalidConfig.
func NewClient(cfg ClientConfig) (*Client, error) {
	c := &Client{backoff: cfg.Backoff, maxAttempts: cfg.MaxAttempts, maxRetryAfter: cfg.MaxRetryAfter,
		budget: cfg.Budget, breaker: cfg.Breaker, pacer: cfg.Pacer, clock: cfg.Clock}
	var err error
	if c.methods, err = parseMethods(cfg.Methods); err != nil {
		return nil, fmt.Errorf("sluicegrpc: ClientConfig.Methods: %w: %w", client.ErrInvalidConfig, err)
	}
	if err := cfg.Backoff.Validate(); err != nil {
		return nil, fmt.Errorf("sluicegrpc: ClientConfig.Backoff: %w", err)
	}
	c.codes = map[codes.Code]bool{}
	for _, code := range cfg.Codes {
		switch code {
		case codes.ResourceExhausted, codes.Unavailable, codes.Aborted, codes.DeadlineExceeded:
			c.codes[code] = true
		default:
			return nil, fmt.Errorf("sluicegrpc: ClientConfig.Codes: %w: %v would fail again", client.ErrInvalidConfig, code)
		}
	}
	if len(c.codes) == 0 {
		c.codes[codes.ResourceExhausted], c.codes[codes.Unavailable] = true, true
	}
	switch {
	case cfg.MaxAttempts < 0:
		return nil, fmt.Errorf("sluicegrpc: ClientConfig.MaxAttempts: %w: %d", client.ErrInvalidConfig, cfg.MaxAttempts)
	case cfg.MaxAttempts == 0:
		c.maxAttempts = client.DefaultMaxAttempts
	}
	switch {
	case cfg.MaxRetryAfter < 0:
		return nil, fmt.Errorf("sluicegrpc: ClientConfig.MaxRetryAfter: %w: %v", client.ErrInvalidConfig, cfg.MaxRetryAfter)
	case cfg.MaxRetryAfter == 0:
		c.maxRetryAfter = client.DefaultMaxRetryAfter
	}
	if c.clock == nil {
		c.clock = core.SystemClock{}
	}
	if c.budget == nil {
		c.budget, _ = client.NewRetryBudget(client.DefaultBudgetTokens, client.DefaultBudgetRatio)
	}
	if c.breaker == nil {
		if c.breaker, err = client.NewBreaker(client.BreakerConfig{Clock: c.clock}); err != nil {
			return nil, err
		}
	}
	if c.pacer == nil {
		if c.pacer, err = client.NewPacer(client.PacingConfig{}, c.clock); err != nil {
			return nil, err
		}
	}
	src := cfg.Rand
	if src == nil {
		var seed [32]byte
		_, _ = crand.Read(seed[:])
		src = rand.NewChaCha8(seed)
	}
	c.rng = rand.New(src)
	return c, nil
}

// Unary is the grpc.UnaryClientInterceptor.
func (c *Client) Unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	target := cc.Target()
	retryable := c.methods.match(method)
	var header, trailer metadata.MD
	opts = append(opts[:len(opts):len(opts)], grpc.Header(&header), grpc.Trailer(&trailer))
	var prev time.Duration
	for attempt := 1; ; attempt++ {
		permit, err := c.breaker.Allow()
		if err != nil {
			return &callError{code: codes.Unavailable, err: err}
		}
		if err := c.pacer.Wait(ctx, target); err != nil {
			permit.Done(core.Ignored)
			if errors.Is(err, client.ErrPaceTooLong) {
				return &callError{code: codes.ResourceExhausted, err: err}
			}
			return status.FromContextError(err).Err()
		}
		header, trailer = nil, nil
		sent := c.clock.Now()
		err = invoker(ctx, method, req, reply, cc, opts...)
		code := status.Code(err)
		now := c.clock.Now()
		delay, hasDelay, abort := serverDelay(err, trailer)
		var buf [fields.MaxItems]fields.Status
		c.pacer.Learn(target, fields.AppendLines(buf[:0], lines(header, trailer), now), HTTPStatus(code), delay, hasDelay, sent)
		switch outcome(code, ctx) {
		case core.Failed:
			if hasDelay {
				permit.FailUntil(now.Add(delay))
			} else {
				permit.Done(core.Failed)
			}
		case core.Ignored:
			permit.Done(core.Ignored)
		default:
			permit.Done(core.Succeeded)
		}
		if !c.codes[code] {
			c.budget.Success()
			return err
		}
		c.budget.Failure()
		if !retryable || abort || attempt >= c.maxAttempts || (hasDelay && delay > c.maxRetryAfter) || !c.budget.CanRetry() {
			return err
		}
		wait := c.delay(attempt, prev, delay, hasDelay)
		if dl, ok := ctx.Deadline(); ok && now.Add(wait).After(dl) {
			return err // the wait would cross the deadline
		}
		if serr := c.clock.SleepUntil(ctx, now.Add(wait)); serr != nil {
			return status.FromContextError(serr).Err()
		}
		prev = wait
	}
}

// delay is the wait before retry number attempt: the backoff, floored by
// the server's delay with a little jitter on top, so that the clients told
// to come back in a second do not all come back at once.
func (c *Client) delay(attempt int, prev, server time.Duration, hasServer bool) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.backoff.Delay(attempt-1, prev, c.rng)
	if hasServer {
		base := c.backoff.Base
		if base == 0 {
			base = client.DefaultBackoffBase
		}
		d = max(d, server) + time.Duration(c.rng.Int64N(int64(max(base, server/10))))
	}
	return d
}

// serverDelay reads the delay the server asked for: the longer of
// RetryInfo and the push-back. abort reports a push-back that says not to
// retry (negative or malformed, gRFC A6).
func serverDelay(err error, trailer metadata.MD) (d time.Duration, ok, abort bool) {
	if err == nil {
		return 0, false, false
	}
	if st, isStatus := status.FromError(err); isStatus {
		for _, detail := range st.Details() {
			if ri, isRI := detail.(*errdetails.RetryInfo); isRI && ri.GetRetryDelay().IsValid() {
				if rd := ri.GetRetryDelay().AsDuration(); rd >= 0 {
					d, ok = max(d, rd), true
				}
			}
		}
	}
	if v := trailer.Get(PushbackKey); len(v) > 0 {
		ms, perr := strconv.ParseInt(v[0], 10, 64)
		if perr != nil || ms < 0 || len(v) > 1 {
			return 0, false, true
		}
		d, ok = max(d, time.Duration(min(ms, int64(fields.MaxReset/time.Millisecond)))*time.Millisecond), true
	}
	return d, ok, false
}

// lines returns the rate-limit metadata of an answer: the header's, where
// allowed calls carry them, or else the trailer's, where refusals do.
func lines(header, trailer metadata.MD) fields.Lines {
	md := header
	if len(md.Get("ratelimit")) == 0 && len(md.Get("ratelimit-limit")) == 0 && len(md.Get("x-ratelimit-limit")) == 0 {
		md = trailer
	}
	return fields.Lines{
		RateLimit: md["ratelimit"], Policy: md["ratelimit-policy"],
		Limit: md["ratelimit-limit"], Remaining: md["ratelimit-remaining"], Reset: md["ratelimit-reset"],
		XLimit: md["x-ratelimit-limit"], XRemaining: md["x-ratelimit-remaining"], XReset: md["x-ratelimit-reset"],
	}
}

// outcome is what a call's code says of the server's health: failures are
// the server's own, or a deadline it made the call miss; a call its
// caller cancelled says nothing.
func outcome(code codes.Code, ctx context.Context) core.Outcome {
	switch code {
	case codes.Unavailable, codes.Internal, codes.Unknown, codes.DataLoss:
		return core.Failed
	case codes.DeadlineExceeded:
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return core.Ignored
		}
		return core.Failed
	case codes.Canceled:
		return core.Ignored
	}
	return core.Succeeded
}

// callError is a call the interceptor failed before sending it: a
// status error of code that unwraps to the client's own error
// (*client.CircuitOpenError, *client.PaceError).
type callError struct {
	code codes.Code
	err  error
}

func (e *callError) Error() string              { return e.err.Error() }
func (e *callError) Unwrap() error              { return e.err }
func (e *callError) GRPCStatus() *status.Status { return status.New(e.code, e.err.Error()) }
