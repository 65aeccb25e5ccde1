package memory

import (
	"sync"

	"github.com/sluice-go/sluice/core"
)

// shard is one lock's worth of the store: a table per policy it has seen.
// Policies are few, so finding a table is a short scan, cheaper than a map.
type shard struct {
	mu     sync.Mutex
	states []*table[core.State]
	logs   []*table[*core.Log]
	half   int // keys the young generations take in before a rotation
	fresh  int // keys taken in since the last rotation
	// Pad to 256 bytes: CPUs fetch cache lines in pairs, and a neighbour's
	// mutex in the same 128 bytes would make two cores fight over it.
	_ [184]byte
}

func (sh *shard) stateTable(p *core.Policy) *table[core.State] {
	for _, t := range sh.states {
		if t.policy == p || t.policy.Fingerprint() == p.Fingerprint() {
			return t
		}
	}
	t := &table[core.State]{policy: p}
	sh.states = append(sh.states, t)
	return t
}

func (sh *shard) logTable(p *core.Policy) *table[*core.Log] {
	for _, t := range sh.logs {
		if t.policy == p || t.policy.Fingerprint() == p.Fingerprint() {
			return t
		}
	}
	t := &table[*core.Log]{policy: p}
	sh.logs = append(sh.logs, t)
	return t
}

// take applies one request to the shard's state.
func (sh *shard) take(p *core.Policy, h uint64, now, cost int64) core.Decision {
	if p.Algorithm() == core.SlidingLog {
		t := sh.logTable(p)
		l := t.get(h, sh)
		if l == nil {
			var empty core.Log
			d := p.TakeLog(&empty, now, cost)
			if d.Allowed {
				*t.insert(h, sh) = &empty
			}
			return d
		}
		d := p.TakeLog(*l, now, cost)
		if (*l).Len() == 0 {
			t.drop(h)
		}
		return d
	}
	t := sh.stateTable(p)
	if st := t.get(h, sh); st != nil {
		return p.Take(st, now, cost)
	}
	var st core.State
	d := p.Take(&st, now, cost)
	if d.Allowed {
		*t.insert(h, sh) = st
	}
	return d
}

// peek is take without taking: the decision a request would get.
func (sh *shard) peek(p *core.Policy, h uint64, now, cost int64) core.Decision {
	if p.Algorithm() == core.SlidingLog {
		l := sh.logTable(p).find(h)
		if l == nil {
			return p.TakeLog(new(core.Log), now, cost)
		}
		d := p.TakeLog(*l, now, cost)
		if d.Allowed {
			p.AdjustLog(*l, now, -cost)
		}
		return d
	}
	var st core.State
	if found := sh.stateTable(p).find(h); found != nil {
		st = *found
	}
	return p.Take(&st, now, cost)
}

// status is the standing of a key without a request.
func (sh *shard) status(p *core.Policy, h uint64, now int64) core.Decision {
	if p.Algorithm() == core.SlidingLog {
		if l := sh.logTable(p).find(h); l != nil {
			return p.StatusLog(*l, now)
		}
		return p.StatusLog(new(core.Log), now)
	}
	var st core.State
	if found := sh.stateTable(p).find(h); found != nil {
		st = *found
	}
	return p.Status(st, now)
}

// adjust applies a refund or charge to a key.
func (sh *shard) adjust(p *core.Policy, h uint64, now, delta int64) core.Decision {
	if p.Algorithm() == core.SlidingLog {
		t := sh.logTable(p)
		l := t.get(h, sh)
		if l == nil {
			l = t.insert(h, sh)
			*l = new(core.Log)
		}
		d := p.AdjustLog(*l, now, delta)
		if (*l).Len() == 0 {
			t.drop(h)
		}
		return d
	}
	t := sh.stateTable(p)
	st := t.get(h, sh)
	if st == nil {
		st = t.insert(h, sh)
	}
	d := p.Adjust(st, now, delta)
	if p.Full(*st, now) {
		t.drop(h)
	}
	return d
}

// undo is how to reverse one take of a layered request denied as a whole.
type undo struct {
	p    *core.Policy
	h    uint64
	cost int64
	prev core.State // the state before the take, for non-log policies
	had  bool
}

// save records what undo needs before a take.
func (sh *shard) save(p *core.Policy, h uint64, cost int64) undo {
	u := undo{p: p, h: h, cost: cost}
	if p.Algorithm() != core.SlidingLog {
		if st := sh.stateTable(p).find(h); st != nil {
			u.prev, u.had = *st, true
		}
	}
	return u
}

func (sh *shard) restore(u undo, now int64) {
	if u.p.Algorithm() == core.SlidingLog {
		t := sh.logTable(u.p)
		if l := t.find(u.h); l != nil {
			u.p.AdjustLog(*l, now, -u.cost)
			if (*l).Len() == 0 {
				t.drop(u.h)
			}
		}
		return
	}
	t := sh.stateTable(u.p)
	switch st := t.find(u.h); {
	case !u.had:
		t.drop(u.h)
	case st != nil:
		*st = u.prev
	}
}

// admit counts a key entering a young generation, rotating the generations
// first if the young ones are full: every old generation of the shard is
// dropped and every young one becomes old.
func (sh *shard) admit() {
	if sh.fresh >= sh.half {
		for _, t := range sh.states {
			t.rotate()
		}
		for _, t := range sh.logs {
			t.rotate()
		}
		sh.fresh = 0
	}
	sh.fresh++
}
