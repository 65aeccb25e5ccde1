package admit

import "sync"

// Swapper replaces the rules of the engines built with it
// (Config.Swapper) while requests flow: an adapter's middleware, which
// keeps its engine to itself, included. Its zero value is ready to use.
type Swapper struct {
	mu      sync.Mutex
	engines []*Engine
}

// Swap replaces the rules of every engine built with s, atomically in
// each: a request decided after Swap returns sees the new rules, and one
// under way sees the old ones to its end (its Settlement included); no
// request sees some of each, and none fails for the swap. The rules are
// checked as New checks them, against each engine's Config, whose other
// fields stay; on an error no engine's rules change. The store keeps a
// key's state per policy name and definition (core.Policy.Fingerprint),
// so a rule whose policy is unchanged keeps every key's count, one whose
// policy changed starts each key afresh, and the state of a policy no
// rule names any more is no longer taken from and expires in the store.
// Concurrent Swaps are applied one at a time.
func (s *Swapper) Swap(rules []Rule) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make([]*Engine, len(s.engines))
	for i, e := range s.engines {
		cfg := e.cfg
		cfg.Rules, cfg.Swapper = rules, nil
		v, err := New(cfg)
		if err != nil {
			return err
		}
		// The dependency links adapt to what their dependencies accept:
		// that state is the engine's, not the rules'.
		v.gates = e.gates
		next[i] = v
	}
	for i, e := range s.engines {
		e.live.Store(next[i])
	}
	return nil
}

// attach makes s swap e's rules.
func (s *Swapper) attach(e *Engine) {
	s.mu.Lock()
	s.engines = append(s.engines, e)
	s.mu.Unlock()
}

// current returns the engine that decides in e's place: the one the last
// Swap built, or e.
func (e *Engine) current() *Engine {
	if v := e.live.Load(); v != nil {
		return v
	}
	return e
}
