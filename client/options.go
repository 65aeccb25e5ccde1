package client

import (
	"math/rand/v2"
	"time"
)

// Option configures a [Transport].
type Option func(*config)

type config struct {
	backoff       Backoff
	maxAttempts   int
	deadline      time.Duration
	maxRetryAfter time.Duration
	retryStatus   []int
	idemHeaders   []string
	maxBody       int64
	clock         Clock
	rand          rand.Source
	hooks         Hooks
	budget        *RetryBudget
	breaker       BreakerConfig
	breakerOn     bool
	pacing        PacingConfig
	pacingOn      bool
}

// WithBackoff sets the backoff schedule (zero fields take defaults).
func WithBackoff(b Backoff) Option { return func(c *config) { c.backoff = b } }

// WithMaxAttempts sets the maximum number of attempts, the first included.
// 1 disables retries.
func WithMaxAttempts(n int) Option { return func(c *config) { c.maxAttempts = n } }

// WithDeadline sets the total time a request may spend retrying, measured
// from the start of RoundTrip: a wait that would end past it is not taken
// and the last failure is returned at once. 0 means no deadline other than
// the request context's, which is always honoured the same way. It does not
// bound a single attempt; use the context or http.Client.Timeout for that.
func WithDeadline(d time.Duration) Option { return func(c *config) { c.deadline = d } }

// WithMaxRetryAfter caps the Retry-After the transport will wait for
// (default 30s). A longer one ends retries at once, returning the response
// that carried it. 0 means no cap other than the deadlines.
func WithMaxRetryAfter(d time.Duration) Option { return func(c *config) { c.maxRetryAfter = d } }

// WithRetryStatuses replaces the set of retryable statuses (default 408, 429,
// 503), typically to add other 5xx such as 500, 502 and 504. Other 4xx are
// ignored: they would fail identically forever.
func WithRetryStatuses(codes ...int) Option {
	return func(c *config) { c.retryStatus = append([]int(nil), codes...) }
}

// WithIdempotencyKeyHeader replaces the header names (default
// "Idempotency-Key") whose presence makes a non-idempotent request, such as
// a POST, retryable.
func WithIdempotencyKeyHeader(names ...string) Option {
	return func(c *config) { c.idemHeaders = append([]string(nil), names...) }
}

// WithMaxBodyBuffer sets how large a request body without GetBody may be and
// still be buffered for replay (default 1 MiB). Larger bodies are streamed
// and their requests not retried.
func WithMaxBodyBuffer(n int64) Option { return func(c *config) { c.maxBody = n } }

// WithRetryBudget sets the budget shared by the transport's requests; pass
// one budget to several transports to share it wider. nil disables it.
func WithRetryBudget(b *RetryBudget) Option { return func(c *config) { c.budget = b } }

// WithBreaker configures the per-host circuit breakers (on by default).
func WithBreaker(cfg BreakerConfig) Option {
	return func(c *config) { c.breaker, c.breakerOn = cfg, true }
}

// WithoutBreaker disables circuit breaking.
func WithoutBreaker() Option { return func(c *config) { c.breakerOn = false } }

// WithPacing configures pacing (on by default).
func WithPacing(cfg PacingConfig) Option {
	return func(c *config) { c.pacing, c.pacingOn = cfg, true }
}

// WithoutPacing disables pacing.
func WithoutPacing() Option { return func(c *config) { c.pacingOn = false } }

// WithClock sets the clock used for waits and timestamps, including the
// breakers' unless their config sets one. Tests inject a fake one.
func WithClock(clk Clock) Option { return func(c *config) { c.clock = clk } }

// WithRandSource sets the random source of the jitter. The default is a
// ChaCha8 generator seeded from crypto/rand, distinct for every transport;
// a fixed source is for tests only. It is used under the transport's lock.
func WithRandSource(src rand.Source) Option { return func(c *config) { c.rand = src } }

// WithHooks sets the observability hooks.
func WithHooks(h Hooks) Option { return func(c *config) { c.hooks = h } }
