package redisslots

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// Slots limits the leases held per key. It is safe for concurrent use.
type Slots struct {
	client     redis.UniversalClient
	limit      int
	prefix     string
	ttl        time.Duration
	renewEvery time.Duration
	retryAfter time.Duration
	instance   string // a random id, so that lease ids are unique across the fleet
	seq        atomic.Uint64
	logger     *slog.Logger
	// releaseTimeout bounds a Permit's give-back (Lease.Done), and lastLog
	// (Unix nanoseconds) spaces the failures it logs a minute apart.
	releaseTimeout time.Duration
	lastLog        atomic.Int64

	mu     sync.Mutex
	held   map[*Lease]struct{}
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// Option configures Slots.
type Option func(*Slots) error

// WithLogger sets where a lease that could not be given back through a
// Permit is logged, at most once a minute (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(s *Slots) error {
		if l == nil {
			return errors.New("redisslots: nil logger")
		}
		s.logger = l
		return nil
	}
}

// WithPrefix sets the prefix of every key (default "sluice:slots:"). It
// must not contain a brace.
func WithPrefix(p string) Option {
	return func(s *Slots) error {
		if strings.ContainsAny(p, "{}") {
			return fmt.Errorf("redisslots: prefix %q contains a brace", p)
		}
		s.prefix = p
		return nil
	}
}

// WithTTL sets how long a lease lasts unless renewed (default 30s, at
// least 10ms): how long the slots of a crashed instance stay taken.
func WithTTL(d time.Duration) Option {
	return func(s *Slots) error {
		if d < 10*time.Millisecond {
			return fmt.Errorf("redisslots: TTL must be at least 10ms, got %v", d)
		}
		s.ttl = d
		return nil
	}
}

// WithRenewEvery sets how often held leases are renewed (default a third of
// the TTL, so that a lease survives two failed renewals). It must be below
// the TTL.
func WithRenewEvery(d time.Duration) Option {
	return func(s *Slots) error {
		if d <= 0 {
			return fmt.Errorf("redisslots: renew interval must be positive, got %v", d)
		}
		s.renewEvery = d
		return nil
	}
}

// WithRetryAfter sets the RetryAfter of a rejection (default 1s).
func WithRetryAfter(d time.Duration) Option {
	return func(s *Slots) error {
		if d < 0 {
			return fmt.Errorf("redisslots: retry-after must not be negative, got %v", d)
		}
		s.retryAfter = d
		return nil
	}
}

// Errors.
var (
	// ErrClosed is returned by Acquire after Close.
	ErrClosed = errors.New("redisslots: closed")
	// ErrLost is returned by Release for a lease that had expired before
	// it was given back: its renewals failed for longer than the TTL (Redis
	// was unreachable), so another request may have had its slot.
	ErrLost = errors.New("redisslots: lease expired before it was released")
)

// New returns Slots allowing limit leases per key, and starts renewing the
// leases it hands out. Close stops it.
func New(client redis.UniversalClient, limit int, opts ...Option) (*Slots, error) {
	if client == nil {
		return nil, errors.New("redisslots: nil client")
	}
	if limit < 1 || limit > backpressure.MaxLimit {
		return nil, fmt.Errorf("redisslots: limit must be 1 to %d, got %d", backpressure.MaxLimit, limit)
	}
	var id [8]byte
	rand.Read(id[:])
	s := &Slots{
		client: client, limit: limit, prefix: "sluice:slots:", ttl: 30 * time.Second,
		retryAfter: time.Second, instance: hex.EncodeToString(id[:]), logger: slog.Default(), releaseTimeout: time.Second,
		held: make(map[*Lease]struct{}), stop: make(chan struct{}), done: make(chan struct{}),
	}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	if s.renewEvery == 0 {
		s.renewEvery = s.ttl / 3
	}
	if s.renewEvery >= s.ttl {
		return nil, fmt.Errorf("redisslots: renew interval %v must be below the TTL %v", s.renewEvery, s.ttl)
	}
	go s.renew()
	return s, nil
}

// Lease is one slot held. Release gives it back.
type Lease struct {
	s        *Slots
	key, id  string
	released atomic.Bool
	lost     atomic.Bool
}

// Acquire takes a slot of key's as Take does, as a backpressure.Permit whose
// Done gives the lease back: Slots serve as admit.Config.Concurrency. The
// class is not used: a key's slots are shared alike. A lease that cannot be
// given back (Redis down) expires after the TTL, and the failure is logged.
func (s *Slots) Acquire(ctx context.Context, key string, _ core.Class) (backpressure.Permit, error) {
	l, err := s.Take(ctx, key)
	if err != nil {
		return backpressure.Permit{}, err
	}
	return backpressure.PermitFor(l), nil
}

// Limit returns the most leases a key may hold at once.
func (s *Slots) Limit() int { return s.limit }

// Take takes a lease on key's slots. It returns a *backpressure.ShedError
// (Reason Saturated) when the key's limit is reached, and a wrapped Redis
// error when Redis could not be asked: the caller chooses whether to admit
// the request regardless.
func (s *Slots) Take(ctx context.Context, key string) (*Lease, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	l := &Lease{s: s, key: s.redisKey(key), id: s.instance + ":" + strconv.FormatUint(s.seq.Add(1), 36)}
	granted, err := acquireScript.Run(ctx, s.client, []string{l.key}, s.limit, s.ttl.Microseconds(), l.id).Int()
	if err != nil {
		return nil, fmt.Errorf("redisslots: acquire %q: %w", key, err)
	}
	if granted == 0 {
		return nil, &backpressure.ShedError{Reason: backpressure.Saturated, Class: core.Default, RetryAfter: s.retryAfter}
	}
	s.mu.Lock()
	s.held[l] = struct{}{}
	s.mu.Unlock()
	return l, nil
}

// Release gives the lease back. Only the first call does anything; it
// returns ErrLost if the lease had expired, and a wrapped Redis error if
// Redis could not be told, in which case the lease expires after the TTL.
func (l *Lease) Release(ctx context.Context) error {
	if l.released.Swap(true) {
		return nil
	}
	s := l.s
	s.mu.Lock()
	delete(s.held, l)
	s.mu.Unlock()
	if l.lost.Load() {
		return ErrLost
	}
	live, err := releaseScript.Run(ctx, s.client, []string{l.key}, l.id).Int()
	switch {
	case err != nil:
		return fmt.Errorf("redisslots: release: %w", err)
	case live == 0:
		return ErrLost
	}
	return nil
}

// Done gives the lease back, as Release does, under a deadline of its own
// (the request's context may be done by now), logging a failure: it makes a
// Lease the backpressure.Releaser of the Permit Acquire returns.
func (l *Lease) Done(core.Outcome) {
	ctx, cancel := context.WithTimeout(context.Background(), l.s.releaseTimeout)
	defer cancel()
	if err := l.Release(ctx); err != nil && !errors.Is(err, ErrLost) {
		l.s.logFailure(err)
	}
}

// InFlight returns the number of leases held on key, across the fleet.
func (s *Slots) InFlight(ctx context.Context, key string) (int, error) {
	n, err := countScript.Run(ctx, s.client, []string{s.redisKey(key)}).Int()
	if err != nil {
		return 0, fmt.Errorf("redisslots: count %q: %w", key, err)
	}
	return n, nil
}

// Close stops renewing leases; those still held expire after the TTL
// unless released first. It does not close the client.
func (s *Slots) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	return nil
}

func (s *Slots) redisKey(key string) string { return s.prefix + "{" + key + "}" }

// renew renews the held leases every renewEvery until Close.
func (s *Slots) renew() {
	defer close(s.done)
	t := time.NewTicker(s.renewEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		leases := make([]*Lease, 0, len(s.held))
		for l := range s.held {
			leases = append(leases, l)
		}
		s.mu.Unlock()
		for _, l := range leases {
			// A renewal may take up to half the TTL: one that times out
			// early would let a lease expire on a merely slow Redis.
			ctx, cancel := context.WithTimeout(context.Background(), s.ttl/2)
			ok, err := renewScript.Run(ctx, s.client, []string{l.key}, s.ttl.Microseconds(), l.id).Int()
			cancel()
			if err == nil && ok == 0 {
				l.lost.Store(true) // expired: renewals failed for a whole TTL
				s.mu.Lock()
				delete(s.held, l)
				s.mu.Unlock()
			}
			// On an error, the next round tries again while the TTL lasts.
		}
	}
}

// acquireScript takes a lease if the key has fewer than ARGV[1] live ones.
// KEYS[1] the key; ARGV: limit, TTL in µs, lease id. Returns 1 if granted
// (or already held: a retried call), 0 if full.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  return 1
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
local ttl = math.ceil(tonumber(ARGV[2]) / 1000) + 1
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
`)

// renewScript extends a live lease by the TTL. KEYS[1] the key; ARGV: TTL
// in µs, lease id. Returns 1 if renewed, 0 if the lease had expired.
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local exp = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not exp or tonumber(exp) <= now then
  redis.call('ZREM', KEYS[1], ARGV[2])
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[2])
local ttl = math.ceil(tonumber(ARGV[1]) / 1000) + 1
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
`)

// releaseScript gives a lease back. KEYS[1] the key; ARGV[1] the lease id.
// Returns 1 if the lease was live, 0 if it had expired.
var releaseScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local exp = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
if exp and tonumber(exp) > now then
  return 1
end
return 0
`)

// countScript sweeps expired leases and counts the live ones. KEYS[1] the
// key.
var countScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])
`)

// logFailure logs err, a lease a Permit could not give back, unless another
// was logged less than a minute ago.
func (s *Slots) logFailure(err error) {
	now := time.Now().UnixNano()
	last := s.lastLog.Load()
	if now-last < int64(time.Minute) || !s.lastLog.CompareAndSwap(last, now) {
		return
	}
	s.logger.Warn("sluice: a concurrency slot could not be given back; it expires after its TTL", slog.Any("error", err), slog.Duration("ttl", s.ttl))
}
