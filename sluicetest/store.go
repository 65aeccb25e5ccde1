package sluicetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// Store is a memory store that a test can make fail on demand, to see what
// an application answers while its rate limiter's store is down (a 503
// under core.WithFailClosed, the request let through when failing open, a
// fallback store's decision), and whose keys it can reset one at a time.
// It is safe for concurrent use.
type Store struct {
	mem *memory.Store

	mu       sync.Mutex
	err      error                     // the error every call fails with, if not nil
	policies map[*core.Policy]struct{} // every policy a request has named
}

// ErrDown is the error of a Store's calls once Fail(nil) has been called.
var ErrDown = errors.New("sluicetest: store down")

// NewStore returns a Store keeping its state in memory, on clock (the
// system clock if nil), which runs nothing in the background: Close it, or
// not, when the test ends. Hand a test's manual clock to the store and to
// admit.Config.Clock alike, so that the decisions and the header fields
// move together.
func NewStore(clock core.Clock) *Store {
	opts := []memory.Option{memory.WithSweepInterval(0)}
	if clock != nil {
		opts = append(opts, memory.WithClock(clock))
	}
	mem, err := memory.New(opts...)
	if err != nil {
		panic("sluicetest: memory store: " + err.Error()) // its options cannot fail
	}
	return &Store{mem: mem, policies: map[*core.Policy]struct{}{}}
}

// Close releases the memory store's state.
func (s *Store) Close() error { return s.mem.Close() }

// Fail makes every call fail with err (ErrDown if nil) until Recover.
func (s *Store) Fail(err error) {
	if err == nil {
		err = ErrDown
	}
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

// Recover ends Fail: calls reach the memory store again, whose state is as
// Fail found it.
func (s *Store) Recover() {
	s.mu.Lock()
	s.err = nil
	s.mu.Unlock()
}

// ResetKey forgets key under every policy a request to the store has named:
// the key starts afresh, as a new client would, while every other key keeps
// its state. A test resets the client it is about to check (an IP, a user,
// an API key), as core.Store.Reset does for one policy.
func (s *Store) ResetKey(ctx context.Context, key string) error {
	s.mu.Lock()
	policies := make([]*core.Policy, 0, len(s.policies))
	for p := range s.policies {
		policies = append(policies, p)
	}
	s.mu.Unlock()
	for _, p := range policies {
		if err := s.mem.Reset(ctx, key, p); err != nil {
			return fmt.Errorf("sluicetest: reset %q under %s: %w", key, p.Name(), err)
		}
	}
	return nil
}

// enter records the policies of a call and returns the error it fails
// with, if the store is down.
func (s *Store) enter(rs ...core.Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rs {
		if r.Policy != nil {
			s.policies[r.Policy] = struct{}{}
		}
	}
	return s.err
}

// Take implements core.Store.
func (s *Store) Take(ctx context.Context, r core.Request) (core.Decision, error) {
	if err := s.enter(r); err != nil {
		return core.Decision{}, err
	}
	return s.mem.Take(ctx, r)
}

// TakeAll implements core.Store.
func (s *Store) TakeAll(ctx context.Context, rs []core.Request, ds []core.Decision) error {
	if err := s.enter(rs...); err != nil {
		return err
	}
	return s.mem.TakeAll(ctx, rs, ds)
}

// Adjust implements core.Store.
func (s *Store) Adjust(ctx context.Context, r core.Request) (core.Decision, error) {
	if err := s.enter(r); err != nil {
		return core.Decision{}, err
	}
	return s.mem.Adjust(ctx, r)
}

// ReturnTurn implements core.Store.
func (s *Store) ReturnTurn(ctx context.Context, r core.Request, in time.Duration) (core.Decision, error) {
	if err := s.enter(r); err != nil {
		return core.Decision{}, err
	}
	return s.mem.ReturnTurn(ctx, r, in)
}

// Reset implements core.Store.
func (s *Store) Reset(ctx context.Context, key string, p *core.Policy) error {
	if err := s.enter(); err != nil {
		return err
	}
	return s.mem.Reset(ctx, key, p)
}
