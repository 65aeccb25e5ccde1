package admit

// Swap replaces the engine's rules with rules, atomically: a request
// decided after Swap returns sees the new rules, and one under way sees the
// old ones to its end (its Settlement included); no request sees some of
// each, and none fails for the swap. The rules are checked as New checks
// them, and every other field of the Config stays as New was given it; on
// an error the old rules stay. The store keeps a key's state per policy
// name and definition (core.Policy.Fingerprint), so a rule whose policy is
// unchanged keeps every key's count, one whose policy changed starts each
// key afresh, and the state of a policy no rule names any more is no
// longer taken from and expires in the store. Swap is safe for concurrent
// use; concurrent Swaps are applied one at a time.
func (e *Engine) Swap(rules []Rule) error {
	e.swapMu.Lock()
	defer e.swapMu.Unlock()
	cfg := e.cfg
	cfg.Rules = rules
	v, err := New(cfg)
	if err != nil {
		return err
	}
	// The dependency links adapt to what their dependencies accept: that
	// state is the engine's, not the rules'.
	v.gates = e.gates
	e.live.Store(v)
	return nil
}

// current returns the engine that decides in e's place: the one the last
// Swap built, or e.
func (e *Engine) current() *Engine {
	if v := e.live.Load(); v != nil {
		return v
	}
	return e
}
