package core

import (
	"context"
	"errors"
	"fmt"
)

// Reserve takes an estimated cost now for work whose actual cost is known
// only afterwards (tokens generated, bytes sent): each request's Cost is the
// estimate. It decides rs as one, as TakeAll does, writing each layer's
// decision to ds if not nil. If the reservation is granted, call Reconcile
// with the actual cost when it is known, or 0 if the work did not
// happen.
func (l *Limiter) Reserve(ctx context.Context, rs []Request, ds []Decision) (*Reservation, error) {
	for _, r := range rs {
		if err := checkCost(r, "estimate", 1); err != nil {
			return nil, err
		}
	}
	res := &Reservation{l: l, reqs: append([]Request(nil), rs...)}
	d, used, err := l.takeAll(ctx, res.reqs, ds, nil)
	if err != nil {
		return nil, err
	}
	if used != nil && used == l.fallback {
		// Settled where taken: on the fallback, under the shares.
		for i := range res.reqs {
			if res.reqs[i].Policy, err = l.shareOf(res.reqs[i].Policy); err != nil {
				return nil, err // cannot happen: the fallback decided under it
			}
		}
	}
	res.Decision, res.store = d, used
	res.settled = !d.Allowed || used == nil
	return res, nil
}

// Reservation is units taken on an estimate, to be reconciled with the actual
// cost. It is not safe for concurrent use.
type Reservation struct {
	// Decision is the reservation's decision: if not Allowed, nothing was
	// taken and Reconcile does nothing.
	Decision Decision

	l       *Limiter
	store   Store // the store that took the units, nil if none did
	reqs    []Request
	settled bool
}

// ErrSettled is returned by Reconcile on a reservation already reconciled.
var ErrSettled = errors.New("sluice: reservation already settled")

// Reconcile settles every layer of the reservation at the actual cost (0 to
// 2^40): the unused estimate is refunded, or the excess charged, into debt if
// need be. A denied reservation reconciles to nothing; one already settled
// returns ErrSettled.
func (r *Reservation) Reconcile(ctx context.Context, actual int64) error {
	return r.settle(ctx, len(r.reqs), func(int) int64 { return actual })
}

// ReconcileEach is Reconcile with an actual cost per layer, in the order
// Reserve was given them: actual[i] settles the i-th, and actual must hold
// one cost per request.
func (r *Reservation) ReconcileEach(ctx context.Context, actual []int64) error {
	return r.settle(ctx, len(actual), func(i int) int64 { return actual[i] })
}

// settle settles each request i at actual(i), given n actual costs.
func (r *Reservation) settle(ctx context.Context, n int, actual func(i int) int64) error {
	if r.settled {
		if r.store == nil || !r.Decision.Allowed {
			return nil
		}
		return ErrSettled
	}
	if n != len(r.reqs) {
		return fmt.Errorf("sluice: %d actual costs for a reservation of %d requests", n, len(r.reqs))
	}
	for i, q := range r.reqs {
		if a := actual(i); a < 0 || a > maxCost {
			return &RequestError{Field: "actual", Value: a, Key: q.Key, Policy: q.Policy.name}
		}
	}
	r.settled = true
	var errs []error
	for i, q := range r.reqs {
		if delta := actual(i) - q.Cost; delta != 0 {
			q.Cost = delta
			if _, err := r.store.Adjust(ctx, q); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		err := asStoreError("adjust", errors.Join(errs...))
		if r.l.observe != nil {
			r.l.report(ctx, r.reqs[0].Key, r.Decision, err, 0)
		}
		return err
	}
	return nil
}
