package memory

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

// ReturnTurn implements core.TurnReturner: it gives back the r.Cost units
// of a LeakyQueue grant whose turn comes in in, where the turn stands in
// the queue (storekit.ReturnTurn); under another algorithm it is Adjust
// with -r.Cost.
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
