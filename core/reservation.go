package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Reserve takes an estimated cost now for work whose actual cost is known
// only afterwards (tokens generated, bytes sent): each request's Cost is the
// estimate. It decides rs as one, as TakeAll does, writing each layer's
// decision to ds if not nil. If the reservation is granted, call Settle as
// the work goes, if it streams, and Reconcile with the actual cost when it
// is known, or 0 if the work did not happen.
//
// On a Reserver store the reservation lives in the store under an id (see
// Reserver), for the Limiter's reservation TTL (WithReservationTTL): what an
// instance that stops settling holds comes back then. Under a LeakyQueue or
// SlidingLog policy, or on the fallback store, it is kept in the Reservation
// and settled with Take and Adjust, with the same figures.
func (l *Limiter) Reserve(ctx context.Context, rs []Request, ds []Decision) (*Reservation, error) {
	for _, r := range rs {
		if err := checkCost(r, "estimate", 1); err != nil {
			return nil, err
		}
	}
	res := &Reservation{l: l, reqs: append([]Request(nil), rs...)}
	var primary func(rs []Request, ds []Decision) error
	if rv, ok := l.store.(Reserver); ok && reservableAll(rs) {
		res.id = newReservationID()
		res.ttl = l.reserveTTL
		if res.ttl == 0 {
			res.ttl = defaultReservationTTL
		}
		primary = func(rs []Request, ds []Decision) error {
			return rv.Reserve(ctx, res.id, rs, ds, res.ttl)
		}
	}
	d, used, err := l.takeAllWith(ctx, res.reqs, ds, nil, primary, false)
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
	if primary != nil && used == l.store {
		res.remote = l.store.(Reserver)
	}
	if !res.settled {
		res.holds = make([]holdState, len(rs))
		for i, r := range res.reqs {
			res.holds[i] = holdState{estimate: r.Cost, held: r.Cost}
		}
	}
	return res, nil
}

func reservableAll(rs []Request) bool {
	for _, r := range rs {
		if !reservable(r.Policy) {
			return false
		}
	}
	return true
}

// newReservationID returns 128 random bits in hex.
func newReservationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
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

	remote Reserver      // the store keeps it, under id, if not nil
	id     string        // its id there
	ttl    time.Duration // its time to live there
	holds  []holdState   // each layer's hold, when kept here
	ds     []Decision    // Settle's decisions
}

// holdState is a layer's hold kept in the Reservation, as a Reserver keeps
// it: the arithmetic is storekit.Hold's.
type holdState struct{ estimate, used, held int64 }

// ErrSettled is returned by Reconcile on a reservation already reconciled.
var ErrSettled = errors.New("sluice: reservation already settled")

// ID returns the reservation's id in its Reserver store, "" if the
// Reservation keeps it itself.
func (r *Reservation) ID() string { return r.id }

// Settle reports the actual cost so far of work that streams (0 to 2^40, a
// running total: a smaller one than before counts as that one) and renews
// the reservation. It keeps the reservation one estimate ahead of the
// usage, taking the difference: a denial (the Decision not Allowed) says
// the budget ran out, and the usage beyond what was held has been charged,
// into debt. The Decision is the most restrictive standing of the layers.
// Settle after Reconcile returns ErrSettled; on a denied reservation it
// does nothing.
func (r *Reservation) Settle(ctx context.Context, used int64) (Decision, error) {
	if r.settled {
		if r.store == nil || !r.Decision.Allowed {
			return r.Decision, nil
		}
		return r.Decision, ErrSettled
	}
	if used < 0 || used > maxCost {
		q := r.reqs[0]
		return r.Decision, &RequestError{Field: "actual", Value: used, Key: q.Key, Policy: q.Policy.name}
	}
	if r.ds == nil {
		r.ds = make([]Decision, len(r.reqs))
	}
	var err error
	if r.remote != nil {
		err = r.settleRemote(ctx, func(int) int64 { return used }, false)
	} else {
		err = r.step(ctx, used)
	}
	if err != nil {
		return r.Decision, r.failed(ctx, "adjust", err)
	}
	best := 0
	for i := range r.ds[1:] {
		if r.ds[i+1].MoreRestrictive(r.ds[best]) {
			best = i + 1
		}
	}
	return r.ds[best], nil
}

// step is Settle on a reservation kept here, as a Reserver does it.
func (r *Reservation) step(ctx context.Context, used int64) error {
	var errs []error
	for i, q := range r.reqs {
		h := &r.holds[i]
		h.used = max(h.used, used)
		need := min(max(h.used+h.estimate-h.held, 0), maxCost)
		var err error
		if need == 0 {
			q.Cost = 0
			r.ds[i], err = r.store.Adjust(ctx, q)
		} else {
			q.Cost = need
			if r.ds[i], err = r.store.Take(ctx, q); err == nil {
				if r.ds[i].Allowed {
					h.held += need
				} else if over := max(h.used-h.held, 0); over > 0 {
					h.held += over
					q.Cost = over
					_, err = r.store.Adjust(ctx, q)
				}
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// settleRemote settles the reservation in its Reserver with each layer's
// running total.
func (r *Reservation) settleRemote(ctx context.Context, used func(i int) int64, final bool) error {
	qs := make([]Request, len(r.reqs))
	for i, q := range r.reqs {
		q.Cost = used(i)
		qs[i] = q
	}
	if r.ds == nil {
		r.ds = make([]Decision, len(r.reqs))
	}
	_, err := r.remote.Settle(ctx, r.id, qs, r.ds, final, r.ttl)
	return err
}

// failed reports err to the observer and returns it as a *StoreError.
func (r *Reservation) failed(ctx context.Context, op string, err error) error {
	err = asStoreError(op, err)
	if r.l.observe != nil {
		r.l.report(ctx, r.reqs[0].Key, r.Decision, err, 0)
	}
	return err
}

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
	if r.remote != nil {
		if err := r.settleRemote(ctx, actual, true); err != nil {
			return r.failed(ctx, "adjust", err)
		}
		return nil
	}
	var errs []error
	for i, q := range r.reqs {
		h := r.holds[i]
		if delta := max(h.used, actual(i)) - h.held; delta != 0 {
			q.Cost = delta
			if _, err := r.store.Adjust(ctx, q); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return r.failed(ctx, "adjust", errors.Join(errs...))
	}
	return nil
}
