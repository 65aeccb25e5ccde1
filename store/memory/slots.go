package memory

import (
	"runtime"
	"sync/atomic"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

// stateTable holds the keys of one policy in one shard, in two generations.
//
// Taking from a key of the young generation, the hot path, takes no shard
// lock: it loads the young slots, finds the key's entry and locks that entry
// alone. Everything that changes which entries exist (inserting a key,
// growing the slots, rotating the generations, promoting a key from the old
// generation, dropping one) holds the shard lock. So the hot path writes only
// the cache line of its own key: a shard lock, taken by every request, would
// move between cores on every other request and cost more than the rest of
// the work.
type stateTable struct {
	policy *core.Policy
	young  atomic.Pointer[slots]
	old    *slots // under the shard lock; nil before the first rotation
}

func newStateTable(p *core.Policy) *stateTable {
	t := &stateTable{policy: p}
	t.young.Store(newSlots(minSlots))
	return t
}

// take applies a request under the shard lock: the hot path's fallback.
func (t *stateTable) take(sh *shard, h uint64, now, cost int64) core.Decision {
	p := t.policy
	if e, _ := t.young.Load().acquire(h, true); e != nil {
		d := storekit.Take(p, &e.st, now, cost)
		e.unlock()
		return d
	}
	st, found := t.takeOld(h)
	d := storekit.Take(p, &st, now, cost)
	if found || d.Allowed {
		sh.admit()
		t.add(h, st)
	}
	return d
}

// adjust applies a refund or charge under the shard lock.
func (t *stateTable) adjust(sh *shard, h uint64, now, delta int64) core.Decision {
	p := t.policy
	young := t.young.Load()
	if e, _ := young.acquire(h, true); e != nil {
		d := storekit.Adjust(p, &e.st, now, delta)
		if storekit.Full(p, e.st, now) {
			young.kill(e, h)
		} else {
			e.unlock()
		}
		return d
	}
	st, _ := t.takeOld(h)
	d := storekit.Adjust(p, &st, now, delta)
	if !storekit.Full(p, st, now) {
		sh.admit()
		t.add(h, st)
	}
	return d
}

// takeOld removes h from the old generation and returns its state.
func (t *stateTable) takeOld(h uint64) (storekit.State, bool) {
	if t.old == nil {
		return storekit.State{}, false
	}
	e, _ := t.old.acquire(h, true)
	if e == nil {
		return storekit.State{}, false
	}
	st := e.st
	t.old.kill(e, h)
	return st, true
}

// add inserts h, which the table does not hold, into the young generation,
// growing it first if it is full. The caller holds the shard lock.
func (t *stateTable) add(h uint64, st storekit.State) {
	s := t.young.Load()
	if (s.used+1)*maxLoadDen > len(s.entries)*maxLoadNum {
		s = t.rebuild(s)
	}
	s.put(h, st)
}

// rebuild copies the live entries of s, the young generation, into a new
// table and publishes it: twice as large if live keys fill half of s or more,
// else the same size without the dead. Each entry
// is locked while it is copied and left moved, so a concurrent hot path either
// finishes its update before the copy or finds the entry moved and retries
// under the shard lock, which the caller holds until the new table is out.
func (t *stateTable) rebuild(s *slots) *slots {
	n := len(s.entries)
	if s.live*2 >= n {
		n *= 2
	}
	ns := newSlots(n)
	s.lockEach(func(e *entry, tag uint64) {
		ns.put(tag>>flagBits, e.st)
		e.word.Store(tag | moved)
	})
	t.young.Store(ns)
	return ns
}

// rotate drops the old generation and makes the young one old.
func (t *stateTable) rotate() {
	t.old = t.young.Load()
	t.young.Store(newSlots(minSlots))
}

// drop forgets h. The caller holds the shard lock.
func (t *stateTable) drop(h uint64) {
	for _, s := range [...]*slots{t.young.Load(), t.old} {
		if s == nil {
			continue
		}
		if e, _ := s.acquire(h, true); e != nil {
			s.kill(e, h)
		}
	}
}

// sweep drops the keys back to full. The caller holds the shard lock and
// read now under it; the hot path does not take that lock, so a key found
// full at now is dropped only if it is still full at a time read after its
// entry was locked, which follows every take that ran on it.
func (t *stateTable) sweep(now int64, clock func() int64) {
	for _, s := range [...]*slots{t.young.Load(), t.old} {
		if s == nil {
			continue
		}
		s.lockEach(func(e *entry, tag uint64) {
			if storekit.Full(t.policy, e.st, now) && storekit.Full(t.policy, e.st, clock()) {
				s.kill(e, tag>>flagBits)
			} else {
				e.word.Store(tag) // unlocked, and no longer marked contended
			}
		})
	}
}

func (t *stateTable) len() int {
	n := t.young.Load().live
	if t.old != nil {
		n += t.old.live
	}
	return n
}

// slots is an open-addressed hash table with linear probing, of a power-of-two
// size. An entry's word says which key it holds and whether it is locked, dead
// (dropped; probing goes past it) or moved (to a larger table, which the shard
// lock publishes). A filled slot never holds another key, so a probe without
// the lock cannot miss a live key: it either finds it or stops at an empty
// slot and lets the caller look again under the lock.
type slots struct {
	entries []entry
	mask    uint64
	// Keep the counters, written by inserts, off the line the hot path
	// reads; at 128 bytes the struct is allocated 128-byte aligned.
	_ [32]byte

	// Under the shard lock.
	live int // keys held
	used int // slots filled, live or dead
	_    [48]byte
}

const (
	locked = 1 << iota
	dead
	moved
	contended

	// flagBits is how far a key's hash is shifted to make its tag. The bits
	// shifted out are the shard index, the same for every key of a shard.
	flagBits = 8
	flagMask = 1<<flagBits - 1

	minSlots = 16
	// A table is rebuilt when more than maxLoad of its slots are filled.
	maxLoadNum, maxLoadDen = 3, 4
	// A hot path that finds an entry locked checks it again a few times
	// before it marks it contended; a waiter under the shard lock, which
	// waits only for a hot path to finish, yields now and then in case that
	// one was preempted.
	spinsBeforeContended = 4
	spinsBeforeYield     = 32
)

func newSlots(n int) *slots {
	return &slots{entries: make([]entry, n), mask: uint64(n - 1)}
}

// tagOf returns the tag of a key hash; Store.hash keeps it nonzero.
func tagOf(h uint64) uint64 { return h << flagBits }

// acquire finds h's live entry and returns it locked, or nil if s does not
// hold it or it moved to a newer table. Without the shard lock (underLock
// false) it also returns nil for a contended entry, with the entry, unlocked,
// as hot.
func (s *slots) acquire(h uint64, underLock bool) (e, hot *entry) {
	tag := tagOf(h)
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		e := &s.entries[i]
		w := e.word.Load()
		if w == 0 {
			return nil, nil
		}
		if w&^flagMask != tag {
			continue
		}
		switch e.lock(tag, underLock) {
		case 0:
			return e, nil
		case contended:
			return nil, e
		case moved:
			return nil, nil
		}
		// Dead: the key may have been inserted again further on.
	}
}

// lockEach calls f with every live entry of s, locked, and its tag; f leaves
// the entry unlocked, dead or moved. The caller holds the shard lock.
func (s *slots) lockEach(f func(e *entry, tag uint64)) {
	for i := range s.entries {
		e := &s.entries[i]
		w := e.word.Load()
		if w == 0 || w&dead != 0 {
			continue
		}
		if tag := w &^ flagMask; e.lock(tag, true) == 0 {
			f(e, tag)
		}
	}
}

// put fills an empty slot with h and st. s must have an empty slot and must
// not hold h alive; the caller holds the shard lock.
func (s *slots) put(h uint64, st storekit.State) {
	i := h & s.mask
	for s.entries[i].word.Load() != 0 {
		i = (i + 1) & s.mask
	}
	e := &s.entries[i]
	e.st = st
	e.word.Store(tagOf(h)) // publishes st to the hot path
	s.live++
	s.used++
}

// kill drops the locked entry e of s.
func (s *slots) kill(e *entry, h uint64) {
	e.st = storekit.State{}
	e.word.Store(tagOf(h) | dead)
	s.live--
}

// entry is one key's state, 24 bytes.
type entry struct {
	word atomic.Uint64  // tag | flags; zero in an empty slot
	st   storekit.State // under the entry's lock
}

// lock locks e, which holds tag, and returns 0; or returns why it did not:
// the entry is dead or moved, or, without the shard lock, contended.
//
// Two cores that take turns on one entry move its cache line back and forth
// on every request, which costs more than the request. So a hot path that
// finds the entry locked for a while marks it contended, and from then on
// every request for it goes through the shard lock, whose waiters sleep and
// leave the holder to serve request after request from its own cache. The
// mark lasts until the next sweep or until the entry is copied to a new table;
// a key still fought over is marked again within a few requests.
func (e *entry) lock(tag uint64, underLock bool) uint64 {
	for spins := 0; ; spins++ {
		w := e.word.Load()
		switch w &^ contended {
		case tag:
			if w&contended != 0 && !underLock {
				return contended
			}
			if e.word.CompareAndSwap(w, w|locked) {
				return 0
			}
		case tag | locked:
			switch {
			case !underLock && spins >= spinsBeforeContended:
				e.word.CompareAndSwap(w, w|contended)
				return contended
			case underLock && spins >= spinsBeforeYield:
				runtime.Gosched()
			}
		default:
			return w & (dead | moved)
		}
	}
}

// unlock unlocks e, keeping its contended mark.
func (e *entry) unlock() { e.word.And(^uint64(locked)) }
