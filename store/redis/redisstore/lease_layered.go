package redisstore

import (
	"context"
	"slices"

	"github.com/sluice-go/sluice/core"
)

// takeAllLeased is TakeAll when some layers are leased: they are decided
// first, from their leases, and the others by Redis together; if any
// layer denies, the leased layers give their units back to their leases
// and report their standing.
//
// A leased layer gets the lease's answer whatever happens to Redis: if
// Redis fails to decide a leased layer the lease could not (see
// leases.take), the request is denied as the lease denies. If Redis fails
// to decide only layers that are not leased, the limiter's failure mode
// answers for them, and the leased layers keep the units they spent: if
// the failure mode admits the request, the leases counted it.
func (s *Store) takeAllLeased(ctx context.Context, rs []core.Request, ds []core.Decision) error {
	var taken, rest []int // leased layers that spent units; layers for Redis
	for i, r := range rs {
		if pi := s.info(r.Policy); pi.lease != nil {
			if d, ok := s.leases.take(ctx, r, pi); ok {
				ds[i] = d
				if !d.Allowed {
					s.deniedByLease(rs, ds, taken, i)
					return nil
				}
				taken = append(taken, i)
				continue
			}
		}
		rest = append(rest, i)
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
		for _, i := range rest {
			if s.info(rs[i].Policy).lease != nil {
				ds[i] = unanswered(rs[i].Policy)
				s.deniedByLease(rs, ds, taken, i)
				return nil
			}
		}
		return err
	}
	allowed := true
	for j, i := range rest {
		ds[i] = subDs[j]
		allowed = allowed && subDs[j].Allowed
	}
	if !allowed {
		s.giveBackTaken(rs, ds, taken)
	}
	return nil
}

// deniedByLease completes ds for a request whose leased layer denied
// denied: the leased layers in taken give their units back, and the layers
// not asked are allowed, with their figures unknown.
func (s *Store) deniedByLease(rs []core.Request, ds []core.Decision, taken []int, denied int) {
	s.giveBackTaken(rs, ds, taken)
	for i, r := range rs {
		if i != denied && !slices.Contains(taken, i) {
			ds[i] = core.Decision{Policy: r.Policy, Allowed: true, Limit: r.Policy.Burst()}
		}
	}
}

// giveBackTaken gives the units the leased layers in taken spent back to
// their leases, and reports their standing.
func (s *Store) giveBackTaken(rs []core.Request, ds []core.Decision, taken []int) {
	for _, i := range taken {
		r := rs[i]
		s.leases.giveBack(s.info(r.Policy), r.Key, r.Cost)
		ds[i].Remaining = min(ds[i].Remaining+r.Cost, ds[i].Limit)
	}
}
