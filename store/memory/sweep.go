package memory

import (
	"sync"
	"time"
	"weak"
)

// sweeper is the background sweep's lifeline, kept apart from the Store so
// that the cleanup run when the Store becomes unreachable can stop it.
type sweeper struct {
	stop, done chan struct{}
	once       sync.Once
}

func (w *sweeper) halt() { w.once.Do(func() { close(w.stop) }) }

// Close stops the background sweep and waits for it to end. It is optional
// (see Store), idempotent, and leaves the store usable.
func (s *Store) Close() error {
	if s.sweeper != nil {
		s.sweeper.halt()
		<-s.sweeper.done
	}
	return nil
}

// Sweep drops every state that is back to full now. The background sweep
// calls it; tests and callers with their own scheduling may too.
func (s *Store) Sweep() {
	s.reclaimAll() // and reclaims the reservations whose time has passed
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		// The time is read under the lock: a time read before it could be
		// later than a Take that ran meanwhile (a clock set back), and would
		// then call that Take's fresh state full. Takes on the hot path do
		// not wait for the lock; stateTable.sweep reads the time again.
		now := s.now()
		for t := s.tables.Load(); t != nil; t = t.next {
			t.shards[i].sweep(t.policy, now, s.now)
		}
		for _, t := range sh.logs {
			t.sweep(now)
		}
		sh.mu.Unlock()
	}
}

// sweep calls Sweep every interval until w is halted, by Close or by the
// cleanup that runs once the store is unreachable. It holds the store weakly
// so that it is not what keeps it reachable.
func sweep(store weak.Pointer[Store], interval time.Duration, w *sweeper) {
	defer close(w.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
			s := store.Value()
			if s == nil {
				return
			}
			s.Sweep()
		}
	}
}
