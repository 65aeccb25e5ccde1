package memory

import (
	"sync"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

// shard is one lock's worth of the store. Its lock guards every change to
// which keys its tables hold (see stateTable), and its sliding logs, whose
// values are whole logs. The hot path does not read it.
type shard struct {
	mu    sync.Mutex
	logs  []*logTable
	half  int // keys the young generations take in before a rotation
	fresh int // keys taken in since the last rotation
	// Keep each shard's lock and counters, written by every insert, off its
	// neighbours' 128 bytes: CPUs fetch cache lines in pairs.
	_ [80]byte
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

// takeLocked applies one request under shard i's lock, writing the decision
// to d.
func (s *Store) takeLocked(i int, p *core.Policy, h uint64, now, cost int64, d *core.Decision) {
	if p.Algorithm() != core.SlidingLog {
		t := s.table(p)
		t.shards[i].take(s, t, i, h, now, cost, d)
		return
	}
	*d = s.takeLog(i, p, h, now, cost)
}

func (s *Store) takeLog(i int, p *core.Policy, h uint64, now, cost int64) core.Decision {
	t := s.shards[i].logTable(p)
	l := t.get(h, s, i)
	if l == nil {
		l = new(storekit.Log)
		d := storekit.TakeLog(p, l, now, cost)
		if d.Allowed {
			t.insert(h, l, s, i)
		}
		return d
	}
	d := storekit.TakeLog(p, l, now, cost)
	if l.Len() == 0 {
		t.drop(h)
	}
	return d
}

// adjustLocked applies a refund or charge to a key under shard i's lock.
func (s *Store) adjustLocked(i int, p *core.Policy, h uint64, now, delta int64) core.Decision {
	if p.Algorithm() != core.SlidingLog {
		t := s.table(p)
		return t.shards[i].adjust(s, t, i, h, now, delta)
	}
	t := s.shards[i].logTable(p)
	l := t.get(h, s, i)
	if l == nil {
		l = new(storekit.Log)
		t.insert(h, l, s, i)
	}
	d := storekit.AdjustLog(p, l, now, delta)
	if l.Len() == 0 {
		t.drop(h)
	}
	return d
}

// dropLocked forgets a key under shard i's lock.
func (s *Store) dropLocked(i int, p *core.Policy, h uint64) {
	if p.Algorithm() == core.SlidingLog {
		s.shards[i].logTable(p).drop(h)
	} else if t := s.findTable(p); t != nil {
		t.shards[i].drop(h)
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

// admit counts a key entering a young generation of shard i, whose lock the
// caller holds, rotating the generations first if the young ones are full:
// every old generation of the shard is dropped and every young one becomes
// old. A table made meanwhile by another shard holds nothing in this one.
func (s *Store) admit(i int) {
	sh := &s.shards[i]
	if sh.fresh >= sh.half {
		for t := s.tables.Load(); t != nil; t = t.next {
			t.shards[i].rotate()
		}
		for _, t := range sh.logs {
			t.rotate()
		}
		sh.fresh = 0
	}
	sh.fresh++
}

// lenLocked returns the number of keys of shard i, whose lock the caller
// holds.
func (s *Store) lenLocked(i int) int {
	n := 0
	for t := s.tables.Load(); t != nil; t = t.next {
		n += t.shards[i].len()
	}
	for _, t := range s.shards[i].logs {
		n += t.len()
	}
	return n
}
