package memory

import (
	"context"
	"slices"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

// TakeAll implements core.Store: every request is granted and taken, or none
// takes anything.
func (s *Store) TakeAll(_ context.Context, rs []core.Request, ds []core.Decision) error {
	if err := storekit.CheckRequests(rs, ds); err != nil {
		return err
	}
	now := s.now()
	var hashBuf [8]uint64
	var lockBuf [8]uint8
	hashes, locks := hashBuf[:0], lockBuf[:0]
	for _, r := range rs {
		h := s.hash(r.Key)
		hashes = append(hashes, h)
		if i := uint8(shardIndex(h)); !slices.Contains(locks, i) {
			locks = append(locks, i)
		}
	}
	slices.Sort(locks)
	for _, i := range locks {
		s.shards[i].mu.Lock()
	}
	defer func() {
		for _, i := range locks {
			s.shards[i].mu.Unlock()
		}
	}()

	// works[refs[i]] is the state key of request i; refs[i] is -1 for a log.
	var workBuf [8]work
	var refBuf [8]int
	works, refs := workBuf[:0], refBuf[:0]
	for i, r := range rs {
		refs = append(refs, -1)
		if r.Policy.Algorithm() != core.SlidingLog {
			works, refs[i] = lockWork(works, s.table(r.Policy), hashes[i])
		}
	}

	var logBuf [8]int
	logsTaken := logBuf[:0]
	denied := false
	for i, r := range rs {
		sh, h, j := s.shardOf(hashes[i]), hashes[i], refs[i]
		switch {
		case j >= 0 && denied:
			st := works[j].st
			ds[i] = storekit.Take(r.Policy, &st, now, r.Cost)
		case j >= 0:
			ds[i] = storekit.Take(r.Policy, &works[j].st, now, r.Cost)
		case denied:
			ds[i] = sh.peekLog(r.Policy, h, now, r.Cost)
		default:
			if ds[i] = s.takeLog(shardIndex(h), r.Policy, h, now, r.Cost); ds[i].Allowed {
				logsTaken = append(logsTaken, i)
			}
		}
		denied = denied || !ds[i].Allowed
	}

	if !denied {
		commit(works, s)
		return nil
	}
	for j := range works {
		if w := &works[j]; w.j >= 0 {
			w.s.release(w.j, w.orig)
		}
	}
	for k := len(logsTaken) - 1; k >= 0; k-- {
		i := logsTaken[k]
		s.shardOf(hashes[i]).undoLog(rs[i].Policy, hashes[i], now, rs[i].Cost)
	}
	for i, r := range rs {
		if !ds[i].Allowed {
			continue
		}
		if j := refs[i]; j >= 0 {
			ds[i] = storekit.Status(r.Policy, works[j].orig, now)
		} else {
			ds[i] = s.shardOf(hashes[i]).statusLog(r.Policy, hashes[i], now)
		}
		ds[i].Allowed = true
	}
	return nil
}

// work is one state key of a layered request: its slot, held, if it has
// one, and the state the request's takes apply to.
type work struct {
	t     *table
	h     uint64
	s     *slots // the generation holding the key, if one does
	j     int    // the key's slot in s, -1 if none
	young bool
	st    storekit.State
	orig  storekit.State
}

// lockWork returns the index in works of the key h of t, holding its slot
// and appending it if it is not there yet.
func lockWork(works []work, t *table, h uint64) ([]work, int) {
	for j, w := range works {
		if w.t == t && w.h == h {
			return works, j
		}
	}
	w := work{t: t, h: h, j: -1}
	st := &t.shards[shardIndex(h)]
	if y := st.young.Load(); y != nil {
		if w.j, _, w.st = y.acquire(h, true); w.j >= 0 {
			w.s, w.young = y, true
		}
	}
	if w.j < 0 && st.old != nil {
		if w.j, _, w.st = st.old.acquire(h, true); w.j >= 0 {
			w.s = st.old
		}
	}
	w.orig = w.st
	return append(works, w), len(works)
}

// commit writes back the states of an allowed layered request. The slots
// of young keys are updated in place first; the other keys then enter the
// young generation, which may rotate the generations.
func commit(works []work, s *Store) {
	for j := range works {
		if w := &works[j]; w.young {
			w.s.release(w.j, w.st)
		}
	}
	for j := range works {
		w := &works[j]
		if w.young {
			continue
		}
		if w.j >= 0 {
			w.s.kill(w.j, w.h)
		}
		i := shardIndex(w.h)
		s.admit(i)
		w.t.shards[i].add(w.t, w.h, w.st)
	}
}
