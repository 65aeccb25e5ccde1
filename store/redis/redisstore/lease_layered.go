package redisstore

import (
	"context"

	"github.com/sluice-go/sluice/core"
)

// takeAllLeased is TakeAll when some layers are leased: they are decided
// first, from their leases, and the others by Redis together; if any
// layer denies, the leased layers give their units back to their leases
// and report their standing.
func (s *Store) takeAllLeased(ctx context.Context, rs []core.Request, ds []core.Decision) error {
	type spent struct {
		i  int
		pi *policyInfo
	}
	var (
		taken  []spent
		rest   []int
		denied = -1
	)
	giveBack := func() {
		for _, t := range taken {
			r := rs[t.i]
			s.leases.giveBack(t.pi, r.Key, r.Cost)
			ds[t.i].Remaining = min(ds[t.i].Remaining+r.Cost, ds[t.i].Limit)
		}
	}
	for i, r := range rs {
		pi := s.info(r.Policy)
		if pi.lease == nil {
			rest = append(rest, i)
			continue
		}
		d, ok, err := s.leases.take(ctx, r, pi)
		switch {
		case !ok:
			rest = append(rest, i)
			continue
		case err != nil:
			giveBack()
			return &core.StoreError{Op: "take-all", Err: err}
		}
		ds[i] = d
		if !d.Allowed {
			denied = i
			break
		}
		taken = append(taken, spent{i, pi})
	}
	if denied >= 0 {
		giveBack()
		for i, r := range rs {
			if i != denied && (i > denied || s.info(r.Policy).lease == nil) {
				// Not asked: allowed, with its figures unknown.
				ds[i] = core.Decision{Policy: r.Policy, Allowed: true, Limit: r.Policy.Burst()}
			}
		}
		return nil
	}
	if len(rest) == 0 {
		return nil
	}
	sub := make([]core.Request, len(rest))
	subDs := make([]core.Decision, len(rest))
	for j, i := range rest {
		sub[j] = rs[i]
	}
	if err := s.takeAll(ctx, sub, subDs); err != nil {
		giveBack()
		return err
	}
	allowed := true
	for j, i := range rest {
		ds[i] = subDs[j]
		allowed = allowed && subDs[j].Allowed
	}
	if !allowed {
		giveBack()
	}
	return nil
}
