// Package reservationctx holds the context key under which a request's
// reservation travels: adapterkit puts it there (WithReservation) and
// httplimit finds it (ReservationFrom), and neither package may import the
// other's unexported names.
package reservationctx

// Key is the context key of a request's *core.Reservation.
type Key struct{}
