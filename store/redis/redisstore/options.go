package redisstore

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
)

const (
	// DefaultPrefix starts every key the store writes.
	DefaultPrefix = "sluice:"
	// DefaultTimeout is how long a caller waits for a decision (see
	// WithTimeout).
	DefaultTimeout = 50 * time.Millisecond
	// DefaultClockGrace is added to every TTL when the store runs on the
	// caller's clock (WithClock): see WithTTLGrace.
	DefaultClockGrace = time.Minute
	// DefaultBatch is the most decisions one script call holds (see
	// WithBatch).
	DefaultBatch = 64
	// DefaultConns is the number of round trips in flight at once (see
	// WithConns).
	DefaultConns = 2

	// maxBatch bounds WithBatch: a batch is one script call, which Redis
	// runs without serving anyone else.
	maxBatch = 1024
	// burstLanes is how many times WithConns the connections in use may
	// grow to while Redis is slow (see pipe).
	burstLanes = 4
	// maxCachedPolicies bounds the per-policy cache; policies beyond it are
	// derived on every call (programs have a handful of policies).
	maxCachedPolicies = 4096
)

// Option configures a Store.
type Option func(*Store) error

// WithPrefix sets the prefix of every key (default DefaultPrefix), so that
// several applications can share a Redis. It may not contain braces, which
// would take the hash tag from the keys.
func WithPrefix(prefix string) Option {
	return func(s *Store) error {
		if strings.ContainsAny(prefix, "{}") {
			return fmt.Errorf("redisstore: prefix %q contains a brace", prefix)
		}
		s.prefix = prefix
		return nil
	}
}

// WithClock decides on the caller's clock instead of the Redis server's
// TIME, for tests (a sluicetest.ManualClock) and callers with a better clock
// than their Redis; all instances sharing a limit must then agree on the
// time. Keys' TTLs get a grace (WithTTLGrace) so that none expires before
// its state is full.
func WithClock(c core.Clock) Option {
	return func(s *Store) error {
		if c == nil {
			return errors.New("redisstore: nil clock")
		}
		s.clock = c
		if s.graceDur < 0 {
			s.graceDur = DefaultClockGrace
		}
		return nil
	}
}

// WithTTLGrace sets the time added to every key's TTL beyond the moment its
// state is back to full: zero by default with the server's time,
// DefaultClockGrace with WithClock. A longer TTL changes no decision; it
// only keeps full state a little longer.
func WithTTLGrace(d time.Duration) Option {
	return func(s *Store) error {
		if d < 0 {
			return fmt.Errorf("redisstore: TTL grace must not be negative, got %v", d)
		}
		s.graceDur = d
		return nil
	}
}

// WithTimeout sets how long a caller waits for a decision (default
// DefaultTimeout; between d and 17/16 of d, or less if the context's
// deadline is earlier). A call still unanswered then fails with a
// *core.StoreError wrapping context.DeadlineExceeded, though Redis may still
// apply it.
func WithTimeout(d time.Duration) Option {
	return func(s *Store) error {
		if d <= 0 {
			return fmt.Errorf("redisstore: timeout must be positive, got %v", d)
		}
		s.timeout = d
		return nil
	}
}

// WithConnTimeout sets how long the store waits on Redis for one round trip
// before it gives the connection up as broken (default: the larger of 1s and
// 8 times the timeout); keep it well above a healthy Redis's slowest round
// trip.
func WithConnTimeout(d time.Duration) Option {
	return func(s *Store) error {
		if d <= 0 {
			return fmt.Errorf("redisstore: connection timeout must be positive, got %v", d)
		}
		s.connWait = d
		return nil
	}
}

// WithBatch sets the most decisions one script call holds (1 to 1024,
// default DefaultBatch). Decisions that wait for a connection go together,
// each applied exactly as if sent alone: batching changes no decision. 1
// sends each decision in a script call of its own (pipelined, on one
// server).
func WithBatch(n int) Option {
	return func(s *Store) error {
		if n < 1 || n > maxBatch {
			return fmt.Errorf("redisstore: batch must be 1 to %d, got %d", maxBatch, n)
		}
		s.batch = n
		return nil
	}
}

// WithConns sets the number of round trips in flight at once, each on a
// connection of its own (1 to 1024, default DefaultConns); while Redis is
// slow the store opens up to four times as many. On a Cluster or a Ring,
// WithBatch(1) needs as many as concurrent decisions are expected.
func WithConns(n int) Option {
	return func(s *Store) error {
		if n < 1 || n > 1024 {
			return fmt.Errorf("redisstore: conns must be 1 to 1024, got %d", n)
		}
		s.nconns = n
		return nil
	}
}

// WithDenyCache remembers up to maxKeys denials locally: once Redis has
// denied cost units on a key until RetryAfter, the same request (same key,
// policy and cost) is denied without a round trip until then. It is exact
// only while nobody gives units back: a refund or Reset on another instance
// does not clear this instance's entry. docs/redis.md says what a cached
// decision reports.
func WithDenyCache(maxKeys int) Option {
	return func(s *Store) error {
		if maxKeys < 1 {
			return fmt.Errorf("redisstore: deny cache size must be positive, got %d", maxKeys)
		}
		s.denies = newDenyCache(maxKeys)
		return nil
	}
}

// WithLogger reports errors that reach no caller (default slog.Default()):
// a Cluster refund that failed after its request was already denied. nil
// reports nothing.
func WithLogger(l *slog.Logger) Option {
	return func(s *Store) error {
		s.log = l
		return nil
	}
}
