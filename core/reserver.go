package core

import (
	"context"
	"fmt"
	"time"
)

// Reserver is a Store that keeps reservations itself, under an id, so that a
// reservation made on one instance of a fleet lives in the shared store:
// settling it is idempotent, and what a reservation no one renews still
// holds comes back once its time to live has passed. A Limiter whose store
// is a Reserver reserves through it (see Limiter.Reserve). Implementations
// must pass storetest.Reservations; storekit.Hold is the arithmetic of one
// layer's hold.
//
// Before deciding on a key, a Reserver reclaims the key's reservations whose
// time to live has passed (at most 16 per key and call, the oldest first):
// the next Reserve or Settle on the key sees their units. Reserve and Settle
// accept every algorithm but LeakyQueue and SlidingLog, which they refuse
// with a *RequestError whose Field is "algorithm".
type Reserver interface {
	Store

	// Reserve decides rs as TakeAll does, each Cost the estimate, and if
	// every layer is granted holds the units under id (1 to 128 bytes, not
	// held already) until ttl (1ms to 24h) passes without a Settle.
	Reserve(ctx context.Context, id string, rs []Request, ds []Decision, ttl time.Duration) error

	// Settle reports the units reservation id has used so far, each
	// rs[i].Cost layer i's running total (0 to 2^40; a total below an
	// earlier one counts as that one), the layers given as to Reserve.
	// Unless final, it renews the reservation for ttl and keeps it one
	// estimate ahead of its usage, taking the difference; a layer that
	// cannot take it is charged what it used beyond its hold, into debt,
	// and its decision is a denial. With final it ends the reservation:
	// what it holds beyond the usage goes back, the usage beyond it is
	// charged. ds get each layer's standing. An id not held (settled,
	// reclaimed, never made) changes nothing and reports held false.
	Settle(ctx context.Context, id string, rs []Request, ds []Decision, final bool, ttl time.Duration) (held bool, err error)
}

// WithReservationTTL sets how long a reservation made on a Reserver store
// outlives its last Settle before the store reclaims it (default a minute):
// the units an instance that crashed mid-stream held come back after it.
// d must be 1ms to 24h.
func WithReservationTTL(d time.Duration) Option {
	return func(l *Limiter) error {
		if d < time.Millisecond || d > maxReservationTTL {
			return fmt.Errorf("sluice: reservation TTL must be 1ms to 24h, got %v", d)
		}
		l.reserveTTL = d
		return nil
	}
}

// defaultReservationTTL is a Limiter's reservation time to live, and
// maxReservationTTL the longest a Reserver accepts.
const (
	defaultReservationTTL = time.Minute
	maxReservationTTL     = 24 * time.Hour
)

// reservable reports whether a Reserver takes a reservation under p.
func reservable(p *Policy) bool {
	return p.Algorithm() != LeakyQueue && p.Algorithm() != SlidingLog
}
