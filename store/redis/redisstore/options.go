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
	// WithConns). Two, not more: fewer lanes make bigger batches, and at
	// 64 callers on a 2-core machine two gave 1.2x the decisions of four
	// (BenchmarkRedis, 100,000 keys), with a lower p99; a slow Redis
	// still gets up to four times as many.
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
// TIME. All instances sharing a limit must then agree on the time; this is
// meant for tests (with a sluicetest.ManualClock) and for callers with a better
// clock than their Redis. Keys' TTLs are reckoned in the clock's time plus
// a grace (DefaultClockGrace, see WithTTLGrace), so that a clock that runs
// behind Redis's, or a test clock that barely moves, never sees a key expire
// before its state is full.
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
// DefaultTimeout). A call still unanswered then fails with a
// *core.StoreError wrapping context.DeadlineExceeded, and its limiter
// applies its failure mode; the call itself goes on (see the package
// documentation, "Deadlines"). Calls share deadlines in spans of a sixteenth
// of d, so a caller waits between d and 17/16 of d; a caller's context with
// an earlier deadline is honoured.
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
// 8 times the timeout). It should be well above the slowest round trip a
// healthy Redis makes: a connection given up costs a new one and its
// handshake.
func WithConnTimeout(d time.Duration) Option {
	return func(s *Store) error {
		if d <= 0 {
			return fmt.Errorf("redisstore: connection timeout must be positive, got %v", d)
		}
		s.connWait = d
		return nil
	}
}

// WithBatch sets the most decisions one script call holds (default
// DefaultBatch; at most 1024). Decisions that wait while every connection
// is busy go together in one script call, applied in the order they came,
// each exactly as if it had been sent alone: batching changes no decision,
// only how many round trips and script calls they take. 1 sends every
// decision in a script call of its own; on one server, the calls of
// decisions that wait still go together in one round trip, pipelined (up to
// DefaultBatch of them), so that an unbatched store's few connections carry
// as many calls at once as a pool of a connection per caller would.
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
// connection of its own (default DefaultConns). A few are enough, as a
// batch (or on one server, with WithBatch(1), a pipeline) grows while they
// are busy; on a Cluster or a Ring, WithBatch(1) needs as many as
// concurrent decisions are expected. While Redis is slow, the store
// opens up to four times as many, so that a decision never waits a whole
// round trip for a connection: see the package documentation.
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
// denied cost units on a key until RetryAfter, the same request on that key
// is denied without a round trip until then, with RetryAfter and ResetAfter
// shortened by the time elapsed (Remaining is the one Redis reported).
//
// It is off by default because it is exact only while nobody gives units
// back: a refund (negative Adjust, a cancelled reservation, a leaky queue's
// waiter giving up its turn) or a Reset on another instance can free the
// key early, and this instance would go on denying until the remembered
// time. Local refunds and resets do clear the entry. Requests of another
// cost, and requests under another policy, are never answered from it.
//
// In TakeAll, a request with any layer remembered as denied is denied
// locally: that layer reports its remembered decision and the other layers
// report Allowed with their Limit, Remaining and ResetAfter left at zero,
// unknown since Redis was not asked.
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
