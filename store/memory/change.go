package memory

import (
	"context"
	"math"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

// ReturnTurn implements core.Store: it gives back the r.Cost units of a
// LeakyQueue grant whose turn comes in in, where the turn stands in the
// queue (storekit.ReturnTurn); under another algorithm it is Adjust with
// -r.Cost.
func (s *Store) ReturnTurn(ctx context.Context, r core.Request, in time.Duration) (core.Decision, error) {
	if err := storekit.CheckRequest(r); err != nil {
		return core.Decision{}, err
	}
	if r.Policy.Algorithm() != core.LeakyQueue {
		return s.Adjust(ctx, core.Request{Key: r.Key, Policy: r.Policy, Cost: -r.Cost})
	}
	now := s.now()
	h := s.hash(r.Key)
	i := shardIndex(h)
	s.shards[i].mu.Lock()
	defer s.shards[i].mu.Unlock()
	t := s.table(r.Policy)
	return t.shards[i].change(s, t, i, h, now, -r.Cost, in.Microseconds()), nil
}

// adjust applies a refund or charge under the shard lock.
func (st *stateTable) adjust(s *Store, t *table, i int, h uint64, now, delta int64) core.Decision {
	return st.change(s, t, i, h, now, delta, noTurn)
}

// noTurn is the in of a change that is an Adjust.
const noTurn = math.MinInt64

// change is adjust, or with in other than noTurn storekit.ReturnTurn of
// -delta units whose turn comes in in µs.
func (st *stateTable) change(s *Store, t *table, i int, h uint64, now, delta, in int64) core.Decision {
	p := t.policy
	apply := func(state *storekit.State) core.Decision {
		if in == noTurn {
			return storekit.Adjust(p, state, now, delta)
		}
		return storekit.ReturnTurn(p, state, now, -delta, in)
	}
	if y := st.young.Load(); y != nil {
		if j, _, state := y.acquire(h, true); j >= 0 {
			d := apply(&state)
			if storekit.Full(p, state, now) {
				y.kill(j, h)
			} else {
				y.release(j, state)
			}
			return d
		}
	}
	state, _ := st.takeOld(h)
	d := apply(&state)
	if !storekit.Full(p, state, now) {
		s.admit(i)
		st.add(t, h, state)
	}
	return d
}
