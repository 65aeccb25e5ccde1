package memory

import (
	"sync"
	"sync/atomic"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

// shard is one lock's worth of the store: a table per policy it has seen.
// Policies are few, so finding a table is a short scan, cheaper than a map.
//
// The state tables are read without the lock (see stateTable); the list of
// them is replaced, never changed, under the lock. The sliding logs, whose
// values are whole logs, stay under the lock.
type shard struct {
	states atomic.Pointer[[]*stateTable]
	// Keep the lock and the counters, written by every insert, off the
	// 128 bytes the hot path reads: CPUs fetch cache lines in pairs.
	_ [120]byte

	mu    sync.Mutex
	logs  []*logTable
	half  int // keys the young generations take in before a rotation
	fresh int // keys taken in since the last rotation
	_     [80]byte
}

// findState returns the state table of p, or nil; it takes no lock.
func (sh *shard) findState(p *core.Policy) *stateTable {
	if ts := sh.states.Load(); ts != nil {
		for _, t := range *ts {
			if t.policy == p || t.policy.Fingerprint() == p.Fingerprint() {
				return t
			}
		}
	}
	return nil
}

// stateTable returns the state table of p, making it if needed. The caller
// holds the lock.
func (sh *shard) stateTable(p *core.Policy) *stateTable {
	if t := sh.findState(p); t != nil {
		return t
	}
	var ts []*stateTable
	if old := sh.states.Load(); old != nil {
		ts = append(ts, *old...)
	}
	t := newStateTable(p)
	ts = append(ts, t)
	sh.states.Store(&ts)
	return t
}

func (sh *shard) logTable(p *core.Policy) *logTable {
	for _, t := range sh.logs {
		if t.policy == p || t.policy.Fingerprint() == p.Fingerprint() {
			return t
		}
	}
	t := &logTable{policy: p}
	sh.logs = append(sh.logs, t)
	return t
}

// take applies one request under the lock.
func (sh *shard) take(p *core.Policy, h uint64, now, cost int64) core.Decision {
	if p.Algorithm() != core.SlidingLog {
		return sh.stateTable(p).take(sh, h, now, cost)
	}
	t := sh.logTable(p)
	l := t.get(h, sh)
	if l == nil {
		l = new(storekit.Log)
		d := storekit.TakeLog(p, l, now, cost)
		if d.Allowed {
			t.insert(h, l, sh)
		}
		return d
	}
	d := storekit.TakeLog(p, l, now, cost)
	if l.Len() == 0 {
		t.drop(h)
	}
	return d
}

// adjust applies a refund or charge to a key under the lock.
func (sh *shard) adjust(p *core.Policy, h uint64, now, delta int64) core.Decision {
	if p.Algorithm() != core.SlidingLog {
		return sh.stateTable(p).adjust(sh, h, now, delta)
	}
	t := sh.logTable(p)
	l := t.get(h, sh)
	if l == nil {
		l = new(storekit.Log)
		t.insert(h, l, sh)
	}
	d := storekit.AdjustLog(p, l, now, delta)
	if l.Len() == 0 {
		t.drop(h)
	}
	return d
}

// drop forgets a key under the lock.
func (sh *shard) drop(p *core.Policy, h uint64) {
	if p.Algorithm() == core.SlidingLog {
		sh.logTable(p).drop(h)
	} else {
		sh.stateTable(p).drop(h)
	}
}

// peekLog is takeLog without taking: the decision a request would get.
func (sh *shard) peekLog(p *core.Policy, h uint64, now, cost int64) core.Decision {
	l := sh.logTable(p).find(h)
	if l == nil {
		return storekit.TakeLog(p, new(storekit.Log), now, cost)
	}
	d := storekit.TakeLog(p, l, now, cost)
	if d.Allowed {
		storekit.AdjustLog(p, l, now, -cost)
	}
	return d
}

// statusLog is the standing of a log key without a request.
func (sh *shard) statusLog(p *core.Policy, h uint64, now int64) core.Decision {
	if l := sh.logTable(p).find(h); l != nil {
		return storekit.StatusLog(p, l, now)
	}
	return storekit.StatusLog(p, new(storekit.Log), now)
}

// undoLog reverses one allowed take from a log.
func (sh *shard) undoLog(p *core.Policy, h uint64, now, cost int64) {
	t := sh.logTable(p)
	if l := t.find(h); l != nil {
		storekit.AdjustLog(p, l, now, -cost)
		if l.Len() == 0 {
			t.drop(h)
		}
	}
}

// admit counts a key entering a young generation, rotating the generations
// first if the young ones are full: every old generation of the shard is
// dropped and every young one becomes old.
func (sh *shard) admit() {
	if sh.fresh >= sh.half {
		if ts := sh.states.Load(); ts != nil {
			for _, t := range *ts {
				t.rotate()
			}
		}
		for _, t := range sh.logs {
			t.rotate()
		}
		sh.fresh = 0
	}
	sh.fresh++
}

func (sh *shard) len() int {
	n := 0
	if ts := sh.states.Load(); ts != nil {
		for _, t := range *ts {
			n += t.len()
		}
	}
	for _, t := range sh.logs {
		n += t.len()
	}
	return n
}
