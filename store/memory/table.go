package memory

import (
	"sync/atomic"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

// table holds the keys of one policy: in each shard, a stateTable of two
// generations. Policies are few, so the hot path finds its table by a short
// walk of the store's list, then the young generation of the key's shard:
// every request under a policy reads the same few cache lines to get there,
// which stay in cache while the keys' own lines come and go.
type table struct {
	policy *core.Policy
	fp     uint64 // the policy's fingerprint: policies equal in it share the table
	spec   storekit.Spec
	stride uint64 // words a slot takes: 2 for one-word states (storekit.OneWord), else 3
	next   *table // the table made before this one
	shards [numShards]stateTable
}

// stateTable holds the keys of one policy in one shard, in two generations.
//
// Taking from a key of the young generation, the hot path, takes no shard
// lock: it loads the young slots, finds the key's slot and locks that slot
// alone. Everything that changes which slots exist (inserting a key, growing
// the slots, rotating the generations, promoting a key from the old
// generation, dropping one) holds the shard lock. So the hot path writes only
// the cache line of its own key: a shard lock, taken by every request, would
// move between cores on every other request and cost more than the rest of
// the work.
type stateTable struct {
	young atomic.Pointer[slots] // nil until the shard's first key
	old   *slots                // under the shard lock; nil before the first rotation
}

// take applies a request under the shard lock: the hot path's fallback.
func (st *stateTable) take(s *Store, t *table, i int, h uint64, now, cost int64, d *core.Decision) {
	if y := st.young.Load(); y != nil {
		if j, _, state := y.acquire(h, true); j >= 0 {
			storekit.TakeTo(d, t.policy, &state, now, cost)
			y.release(j, state)
			return
		}
	}
	state, found := st.takeOld(h)
	storekit.TakeTo(d, t.policy, &state, now, cost)
	if found || d.Allowed {
		s.admit(i)
		st.add(t, h, state)
	}
}

// takeOld removes h from the old generation and returns its state.
func (st *stateTable) takeOld(h uint64) (storekit.State, bool) {
	if st.old == nil {
		return storekit.State{}, false
	}
	j, _, state := st.old.acquire(h, true)
	if j < 0 {
		return storekit.State{}, false
	}
	st.old.kill(j, h)
	return state, true
}

// add inserts h, which the table does not hold, into the young generation,
// making it or growing it first if need be. The caller holds the shard lock.
func (st *stateTable) add(t *table, h uint64, state storekit.State) {
	y := st.young.Load()
	switch {
	case y == nil:
		y = newSlots(minSlots, t.stride)
		st.young.Store(y)
	case (y.used+1)*maxLoadDen > y.len()*maxLoadNum:
		y = st.rebuild(y)
	}
	y.put(h, state)
}

// rebuild copies the live slots of s, the young generation, into a new
// table and publishes it: twice as large if live keys fill half of s or more,
// else the same size without the dead. Each slot is held while it is copied
// and left moved, so a concurrent hot path either finishes its update before
// the copy or finds the slot moved and retries under the shard lock, which
// the caller holds until the new table is out.
func (st *stateTable) rebuild(s *slots) *slots {
	n := s.len()
	if s.live*2 >= n {
		n *= 2
	}
	ns := newSlots(n, s.stride)
	s.holdEach(func(j int, tag uint64, state storekit.State) {
		ns.put(tag>>flagBits, state)
		atomic.StoreUint64(&s.words[j], tag|moved) // a one-word state stays poisoned
	})
	st.young.Store(ns)
	return ns
}

// rotate drops the old generation and makes the young one old; the young
// one is made again by the next key.
func (st *stateTable) rotate() {
	st.old = st.young.Load()
	st.young.Store(nil)
}

// drop forgets h. The caller holds the shard lock.
func (st *stateTable) drop(h uint64) {
	for _, s := range [...]*slots{st.young.Load(), st.old} {
		if s == nil {
			continue
		}
		if j, _, _ := s.acquire(h, true); j >= 0 {
			s.kill(j, h)
		}
	}
}

// sweep drops the keys of p back to full. The caller holds the shard lock and
// read now under it; the hot path does not take that lock, so a key found
// full at now is dropped only if it is still full at a time read after its
// slot was held, which follows every take that ran on it.
func (st *stateTable) sweep(p *core.Policy, now int64, clock func() int64) {
	for _, s := range [...]*slots{st.young.Load(), st.old} {
		if s == nil {
			continue
		}
		s.holdEach(func(j int, tag uint64, state storekit.State) {
			if storekit.Full(p, state, now) && storekit.Full(p, state, clock()) {
				s.kill(j, tag>>flagBits)
			} else {
				s.setState(j, state)
				atomic.StoreUint64(&s.words[j], tag) // let go, and no longer marked contended
			}
		})
	}
}

func (st *stateTable) len() int {
	n := 0
	if y := st.young.Load(); y != nil {
		n += y.live
	}
	if st.old != nil {
		n += st.old.live
	}
	return n
}
