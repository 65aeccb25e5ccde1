package memory

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

const (
	shardBits = 8
	numShards = 1 << shardBits

	// defaultMaxKeys bounds a store built without WithMaxKeys: about 50 MB
	// of token-bucket state at worst.
	defaultMaxKeys = 1 << 20
	// minMaxKeys is the smallest cap WithMaxKeys accepts: two keys a shard.
	minMaxKeys = 2 * numShards

	// defaultSweepInterval is how often full state is dropped.
	defaultSweepInterval = time.Minute
)

// Store is the in-memory core.Store. Build it with New; it is safe for
// concurrent use. It needs no Close: its background sweep holds it only
// weakly and ends once the store is unreachable. Close ends the sweep at a
// moment of the caller's choosing (tests checking for leaked goroutines).
type Store struct {
	// First, so that the shards start on the allocation's alignment.
	shards [numShards]shard

	// tables lists the state tables, one per policy, newest first: what the
	// hot path reads first. Tables are made under tablesMu, never dropped.
	tables   atomic.Pointer[table]
	tablesMu sync.Mutex

	seed     maphash.Seed
	clock    core.Clock
	system   bool      // clock is the real one: read only its monotonic part
	baseWall int64     // the clock's reading at New, µs since the epoch
	baseMono time.Time // the same instant, for monotonic differences
	perShard int       // the most keys one shard keeps
	sweep    time.Duration

	sweeper *sweeper // nil when the sweep is off
}

var _ core.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store) error

// WithMaxKeys bounds the number of keys the store keeps, across all policies
// (default 1,048,576: about 50 MB of token-bucket state at worst). Each of
// the 256 shards keeps at most its share, n/256, so the store never holds
// more than n; n must be at least 512, the smallest cap that leaves every
// shard room for two generations.
func WithMaxKeys(n int) Option {
	return func(s *Store) error {
		if n < minMaxKeys {
			return fmt.Errorf("memory: max keys must be at least %d, got %d", minMaxKeys, n)
		}
		s.perShard = n / numShards
		return nil
	}
}

// WithClock sets the clock (default core.SystemClock). Time is the clock's
// reading at New plus the monotonic time elapsed since, so a wall clock
// stepping back never moves a limit.
func WithClock(c core.Clock) Option {
	return func(s *Store) error {
		if c == nil {
			return errors.New("memory: nil clock")
		}
		s.clock = c
		return nil
	}
}

// WithSweepInterval sets how often state back to full is dropped (default
// a minute); zero turns the sweep off, leaving eviction alone to
// bound the store.
func WithSweepInterval(d time.Duration) Option {
	return func(s *Store) error {
		if d < 0 {
			return fmt.Errorf("memory: sweep interval must not be negative, got %v", d)
		}
		s.sweep = d
		return nil
	}
}

// New returns a Store.
func New(opts ...Option) (*Store, error) {
	s := &Store{
		seed:     maphash.MakeSeed(),
		clock:    core.SystemClock{},
		perShard: defaultMaxKeys / numShards,
		sweep:    defaultSweepInterval,
	}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	_, s.system = s.clock.(core.SystemClock)
	s.baseMono = s.clock.Now()
	s.baseWall = s.baseMono.UnixMicro()
	for i := range s.shards {
		s.shards[i].half = s.perShard / 2
	}
	if s.sweep > 0 {
		w := &sweeper{stop: make(chan struct{}), done: make(chan struct{})}
		s.sweeper = w
		go sweep(weak.Make(s), s.sweep, w)
		runtime.AddCleanup(s, (*sweeper).halt, w)
	}
	return s, nil
}

// Take implements core.Store.
func (s *Store) Take(_ context.Context, r core.Request) (d core.Decision, err error) {
	p := r.Policy
	if p == nil || r.Cost < 1 || r.Cost > storekit.MaxCost {
		return d, storekit.CheckRequest(r)
	}
	var now int64 // s.now(), inline
	if s.system {
		now = max(s.baseWall+time.Since(s.baseMono).Microseconds(), 1)
	} else {
		now = s.clockNow()
	}
	h := s.hash(r.Key)
	i := shardIndex(h)
	var hot *slots
	hotJ := -1
	if t := s.findTable(p); t != nil {
		if y := t.shards[i].young.Load(); y != nil {
			var j int
			var state storekit.State
			if y.stride == 2 {
				if y.swap(h, &t.spec, p, now, r.Cost, &d) {
					return d, nil
				}
				j, hotJ, state = y.acquire(h, false)
			} else {
				// y.acquire(h, false), inline for the commonest case:
				// the first slot probed holds h, unlocked and unmarked.
				j = int((h & y.mask) * 3)
				if w := atomic.LoadUint64(&y.words[j]); w == tagOf(h) && atomic.CompareAndSwapUint64(&y.words[j], w, w|locked) {
					state = storekit.StateOf(int64(y.words[j+1]), int64(y.words[j+2]))
				} else {
					j, hotJ, state = y.acquire(h, false)
				}
			}
			if j >= 0 {
				t.spec.TakeTo(&d, &state, now, r.Cost)
				d.Policy = p
				y.release(j, state)
				return d, nil
			}
			hot = y
		}
	}
	sh := &s.shards[i]
	sh.mu.Lock()
	if hotJ >= 0 && atomic.LoadUint64(&hot.words[hotJ]) == tagOf(h)|contended {
		// Contended and unlocked: no hot path locks it any more, so the
		// shard lock is all it needs. Had a hot path locked it before the
		// mark, the word would say so, and the locked take would wait for
		// it.
		hot.take(hotJ, p, now, r.Cost, &d)
	} else {
		s.takeLocked(i, p, h, now, r.Cost, &d)
	}
	sh.mu.Unlock()
	return d, nil
}

// Adjust implements core.Store.
func (s *Store) Adjust(_ context.Context, r core.Request) (core.Decision, error) {
	if err := storekit.CheckAdjust(r); err != nil {
		return core.Decision{}, err
	}
	now := s.now()
	h := s.hash(r.Key)
	i := shardIndex(h)
	s.shards[i].mu.Lock()
	defer s.shards[i].mu.Unlock()
	return s.adjustLocked(i, r.Policy, h, now, r.Cost), nil
}

// Reset implements core.Store.
func (s *Store) Reset(_ context.Context, key string, p *core.Policy) error {
	if p == nil {
		return &core.RequestError{Field: "policy", Key: key}
	}
	h := s.hash(key)
	i := shardIndex(h)
	s.shards[i].mu.Lock()
	defer s.shards[i].mu.Unlock()
	s.dropLocked(i, p, h)
	return nil
}

// Len returns the number of keys the store holds, across all policies.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += s.lenLocked(i)
		sh.mu.Unlock()
	}
	return n
}

// now returns the time in µs since the epoch: the clock's reading at New
// plus the monotonic time since.
//
// With the real clock it reads only the monotonic clock (time.Since), which
// costs half of time.Now on virtual machines whose clock reads are slow: the
// one clock read of a decision.
func (s *Store) now() int64 {
	if s.system {
		return max(s.baseWall+time.Since(s.baseMono).Microseconds(), 1)
	}
	return s.clockNow()
}

func (s *Store) clockNow() int64 {
	return max(s.baseWall+s.clock.Now().Sub(s.baseMono).Microseconds(), 1)
}

// hash returns the hash of a key. The top shardBits pick the shard and the
// rest identify the key in it; those are never all zero, which would read as
// an empty slot.
func (s *Store) hash(key string) uint64 {
	h := maphash.String(s.seed, key)
	if h<<flagBits == 0 {
		h |= 1
	}
	return h
}

// findTable returns the table of p, or nil; it takes no lock.
func (s *Store) findTable(p *core.Policy) *table {
	for t := s.tables.Load(); t != nil; t = t.next {
		if t.policy == p || t.fp == p.Fingerprint() {
			return t
		}
	}
	return nil
}

// table returns the table of p, which is not a SlidingLog policy, making it
// if need be.
func (s *Store) table(p *core.Policy) *table {
	if t := s.findTable(p); t != nil {
		return t
	}
	s.tablesMu.Lock()
	defer s.tablesMu.Unlock()
	if t := s.findTable(p); t != nil {
		return t
	}
	t := &table{policy: p, fp: p.Fingerprint(), spec: storekit.SpecOf(p), stride: 3, next: s.tables.Load()}
	if storekit.OneWord(p) {
		t.stride = 2
	}
	s.tables.Store(t)
	return t
}

func shardIndex(h uint64) int { return int(h >> (64 - shardBits)) }

func (s *Store) shardOf(h uint64) *shard { return &s.shards[shardIndex(h)] }
