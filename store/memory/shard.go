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
	_      [64]byte
}

// table holds the keys of one policy in one shard, in two generations.
type table[V any] struct {
	policy *core.Policy
	young  map[uint64]V
	old    map[uint64]V
}

func (sh *shard) stateTable(p *core.Policy) *table[core.State] {
	for _, t := range sh.states {
		if t.policy == p || t.policy.Fingerprint() == p.Fingerprint() {
			return t
		}
	}
	t := &table[core.State]{policy: p, young: make(map[uint64]core.State)}
	sh.states = append(sh.states, t)
	return t
}

func (sh *shard) logTable(p *core.Policy) *table[*core.Log] {
	for _, t := range sh.logs {
		if t.policy == p || t.policy.Fingerprint() == p.Fingerprint() {
			return t
		}
	}
	t := &table[*core.Log]{policy: p, young: make(map[uint64]*core.Log)}
	sh.logs = append(sh.logs, t)
	return t
}

// take applies one request to the shard's state.
func (sh *shard) take(p *core.Policy, h uint64, now, cost int64) core.Decision {
	if p.Algorithm() == core.SlidingLog {
		t := sh.logTable(p)
		l, ok := t.get(h, sh)
		if !ok {
			l = new(core.Log)
		}
		d := p.TakeLog(l, now, cost)
		t.keepOrDrop(h, l, l.Len() == 0, sh)
		return d
	}
	t := sh.stateTable(p)
	st, ok := t.get(h, sh)
	d := p.Take(&st, now, cost)
	if d.Allowed {
		if !ok {
			sh.admit()
		}
		t.young[h] = st
	}
	return d
}

// peek is take without taking: the decision a request would get.
func (sh *shard) peek(p *core.Policy, h uint64, now, cost int64) core.Decision {
	if p.Algorithm() == core.SlidingLog {
		l, ok := sh.logTable(p).find(h)
		if !ok {
			return p.TakeLog(new(core.Log), now, cost)
		}
		d := p.TakeLog(l, now, cost)
		if d.Allowed {
			p.AdjustLog(l, now, -cost)
		}
		return d
	}
	st, _ := sh.stateTable(p).find(h)
	return p.Take(&st, now, cost)
}

// status is the standing of a key without a request.
func (sh *shard) status(p *core.Policy, h uint64, now int64) core.Decision {
	if p.Algorithm() == core.SlidingLog {
		l, ok := sh.logTable(p).find(h)
		if !ok {
			l = new(core.Log)
		}
		return p.StatusLog(l, now)
	}
	st, _ := sh.stateTable(p).find(h)
	return p.Status(st, now)
}

// undo is how to reverse one take of a layered request that was denied as a
// whole.
type undo struct {
	sh    *shard
	p     *core.Policy
	h     uint64
	prev  core.State // the state before the take, for non-log policies
	had   bool
	cost  int64
	stats *table[core.State]
	logs  *table[*core.Log]
}

// save records what undo needs before a take.
func (sh *shard) save(p *core.Policy, h uint64, now int64) undo {
	u := undo{sh: sh, p: p, h: h}
	if p.Algorithm() == core.SlidingLog {
		u.logs = sh.logTable(p)
		return u
	}
	u.stats = sh.stateTable(p)
	u.prev, u.had = u.stats.find(h)
	return u
}

func (u *undo) restore(now int64) {
	if u.logs != nil {
		if l, ok := u.logs.find(u.h); ok {
			u.p.AdjustLog(l, now, -u.cost)
			if l.Len() == 0 {
				u.logs.drop(u.h)
			}
		}
		return
	}
	if u.had {
		if _, ok := u.stats.young[u.h]; !ok {
			u.sh.admit()
		}
		u.stats.young[u.h] = u.prev
	} else {
		u.stats.drop(u.h)
	}
}

// get finds h's value, moving it to the young generation if it was in the
// old one. A miss returns the zero value: the caller decides whether to keep
// a new key, and keep counts it.
func (t *table[V]) get(h uint64, sh *shard) (V, bool) {
	if v, ok := t.young[h]; ok {
		return v, true
	}
	if v, ok := t.old[h]; ok {
		delete(t.old, h)
		sh.admit()
		t.young[h] = v
		return v, true
	}
	var zero V
	return zero, false
}

// find is get without moving anything.
func (t *table[V]) find(h uint64) (V, bool) {
	if v, ok := t.young[h]; ok {
		return v, true
	}
	v, ok := t.old[h]
	return v, ok
}

// keepOrDrop stores v under h in the young generation, or forgets h if its
// state is back to full.
func (t *table[V]) keepOrDrop(h uint64, v V, full bool, sh *shard) {
	if full {
		t.drop(h)
		return
	}
	if _, ok := t.young[h]; !ok {
		sh.admit()
	}
	t.young[h] = v
}

func (t *table[V]) drop(h uint64) {
	delete(t.young, h)
	delete(t.old, h)
}

func (t *table[V]) sweep(full func(V) bool) {
	for h, v := range t.young {
		if full(v) {
			delete(t.young, h)
		}
	}
	for h, v := range t.old {
		if full(v) {
			delete(t.old, h)
		}
	}
}

// admit counts a key entering a young generation, rotating the generations
// first if the young ones are full: every old generation of the shard is
// dropped and every young one becomes old.
func (sh *shard) admit() {
	if sh.fresh >= sh.half {
		for _, t := range sh.states {
			t.old, t.young = t.young, make(map[uint64]core.State)
		}
		for _, t := range sh.logs {
			t.old, t.young = t.young, make(map[uint64]*core.Log)
		}
		sh.fresh = 0
	}
	sh.fresh++
}
