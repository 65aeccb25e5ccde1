package client

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Option configures a [Transport]. An option given a bad value makes
// [NewTransport] fail with an error wrapping [ErrInvalidConfig].
type Option func(*config) error

// ErrInvalidConfig is wrapped by every error a constructor returns for a bad
// option or config field: such a value is reported, never clamped into a
// limit other than the one asked for.
var ErrInvalidConfig = errors.New("client: invalid configuration")

// invalid builds an error wrapping ErrInvalidConfig.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}

// config collects the options of NewTransport.
type config struct {
	backoff       Backoff
	maxAttempts   int
	deadline      time.Duration
	maxRetryAfter time.Duration
	retryStatus   []int
	idemHeaders   []string
	maxBody       int64
	clock         core.Clock
	rand          rand.Source
	hooks         Hooks
	budget        *RetryBudget
	breaker       BreakerConfig
	breakerOn     bool
	pacing        PacingConfig
	pacingOn      bool
	throttle      ThrottleConfig
	throttleOn    bool
}

func defaultConfig() config {
	return config{
		maxAttempts:   DefaultMaxAttempts,
		deadline:      DefaultDeadline,
		maxRetryAfter: DefaultMaxRetryAfter,
		retryStatus:   []int{http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusServiceUnavailable},
		idemHeaders:   []string{"Idempotency-Key"},
		maxBody:       DefaultMaxBodyBuffer,
		clock:         core.SystemClock{},
		budget:        newRetryBudget(DefaultBudgetTokens*budgetUnit, DefaultBudgetRatio*budgetUnit),
		breakerOn:     true,
		pacingOn:      true,
	}
}

// WithBackoff sets the backoff schedule. Zero fields take defaults; a
// schedule that [Backoff.Validate] rejects is an error.
func WithBackoff(b Backoff) Option {
	return func(c *config) error {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("WithBackoff: %w", err)
		}
		c.backoff = b
		return nil
	}
}

// WithMaxAttempts sets the maximum number of attempts, the first included:
// at least 1, which disables retries.
func WithMaxAttempts(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return invalid("WithMaxAttempts(%d): at least 1 attempt is needed", n)
		}
		c.maxAttempts = n
		return nil
	}
}

// WithDeadline sets the total time a request may spend retrying, measured
// from the start of RoundTrip: a wait that would end past it is not taken
// and the last failure is returned at once. 0 means no deadline other than
// the request context's, which is always honoured the same way; a negative
// one is an error. It does not bound a single attempt; use the context or
// http.Client.Timeout for that.
func WithDeadline(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("WithDeadline(%v): negative", d)
		}
		c.deadline = d
		return nil
	}
}

// WithMaxRetryAfter caps the Retry-After the transport will wait for
// (default 30s). A longer one ends retries at once, returning the response
// that carried it. 0 means no cap other than the deadlines; a negative cap
// is an error.
func WithMaxRetryAfter(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("WithMaxRetryAfter(%v): negative", d)
		}
		c.maxRetryAfter = d
		return nil
	}
}

// WithRetryStatuses replaces the set of retryable statuses (default 408, 429,
// 503), typically to add other 5xx such as 500, 502 and 504. Only 408, 429
// and 5xx are accepted: any other status would fail identically forever,
// and asking for it is an error. No codes means only transport errors are
// retried.
func WithRetryStatuses(codes ...int) Option {
	return func(c *config) error {
		for _, code := range codes {
			if code != http.StatusRequestTimeout && code != http.StatusTooManyRequests && (code < 500 || code > 599) {
				return invalid("WithRetryStatuses: %d is not retryable (only 408, 429 and 5xx are)", code)
			}
		}
		c.retryStatus = append([]int(nil), codes...)
		return nil
	}
}

// WithIdempotencyKeyHeader replaces the header names (default
// "Idempotency-Key") whose presence makes a non-idempotent request, such as
// a POST, retryable. No names means only idempotent methods are retried; a
// name that is not a valid header field name is an error.
func WithIdempotencyKeyHeader(names ...string) Option {
	return func(c *config) error {
		for _, n := range names {
			if !isToken(n) {
				return invalid("WithIdempotencyKeyHeader: %q is not a header field name", n)
			}
		}
		c.idemHeaders = append([]string(nil), names...)
		return nil
	}
}

// WithMaxBodyBuffer sets how large a request body without GetBody may be and
// still be buffered for replay (default 1 MiB). Larger bodies are streamed
// and their requests not retried; 0 buffers nothing, a negative size is an
// error.
func WithMaxBodyBuffer(n int64) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("WithMaxBodyBuffer(%d): negative", n)
		}
		c.maxBody = n
		return nil
	}
}

// WithRetryBudget sets the budget shared by the transport's requests; pass
// one budget to several transports to share it wider. nil disables it.
func WithRetryBudget(b *RetryBudget) Option {
	return func(c *config) error {
		c.budget = b
		return nil
	}
}

// WithBreaker configures the per-host circuit breakers (on by default with
// the zero BreakerConfig). A config that [NewBreaker] would reject is an
// error.
func WithBreaker(cfg BreakerConfig) Option {
	return func(c *config) error {
		if err := cfg.validate(); err != nil {
			return fmt.Errorf("WithBreaker: %w", err)
		}
		c.breaker, c.breakerOn = cfg, true
		return nil
	}
}

// WithoutBreaker disables circuit breaking.
func WithoutBreaker() Option {
	return func(c *config) error {
		c.breakerOn = false
		return nil
	}
}

// WithPacing configures pacing (on by default with the zero PacingConfig).
// A field out of its documented range is an error.
func WithPacing(cfg PacingConfig) Option {
	return func(c *config) error {
		if err := cfg.validate(); err != nil {
			return fmt.Errorf("WithPacing: %w", err)
		}
		c.pacing, c.pacingOn = cfg, true
		return nil
	}
}

// WithoutPacing disables pacing.
func WithoutPacing() Option {
	return func(c *config) error {
		c.pacingOn = false
		return nil
	}
}

// WithClock sets the clock used for waits and timestamps, including the
// breakers' unless their config sets one. Tests inject a fake one; nil is
// an error.
func WithClock(clk core.Clock) Option {
	return func(c *config) error {
		if clk == nil {
			return invalid("WithClock(nil)")
		}
		c.clock = clk
		return nil
	}
}

// WithRandSource sets the random source of the jitter. The default is a
// ChaCha8 generator seeded from crypto/rand, distinct for every transport;
// a fixed source is for tests only, and nil is an error. It is used under
// the transport's lock.
func WithRandSource(src rand.Source) Option {
	return func(c *config) error {
		if src == nil {
			return invalid("WithRandSource(nil)")
		}
		c.rand = src
		return nil
	}
}

// WithHooks sets the observability hooks.
func WithHooks(h Hooks) Option {
	return func(c *config) error {
		c.hooks = h
		return nil
	}
}

// isToken reports whether s is an RFC 9110 token, the syntax of a field name.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isTChar(s[i]) {
			return false
		}
	}
	return s != ""
}

// isTChar reports an RFC 9110 token character.
func isTChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
