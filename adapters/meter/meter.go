// Package meter settles a reserved cost as a response streams: a handler
// behind admit.Config.Estimates adds the units it produces (tokens, bytes)
// and the reservation is settled every Step units, so that every instance
// sees the budget spent so far and a stream that runs past it can stop.
//
//	m := meter.New(r.Context(), meter.Config{Step: 16})
//	for tok := range completion {
//		fmt.Fprintf(w, "data: %s\n\n", tok)
//		if !m.Add(r.Context(), 1) {
//			break // the budget is spent
//		}
//	}
//	m.Close(r.Context())
//
// docs/streaming.md has the rest.
package meter

import (
	"context"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/fields"
)

// Meter settles a request's reservation (admit.Config.Estimates) as its response
// streams: server-sent events, a chunked body, a gRPC server stream. The
// handler adds the units it produces; every Step units the Meter settles
// them with the store (core.Reservation.Settle), so that other requests,
// on any instance, see the budget as spent so far; Close settles the
// total. It is not safe for concurrent use.
type Meter struct {
	res     *core.Reservation
	step    int64
	finish  bool
	used    int64
	settled int64 // the total last settled
	last    core.Decision
	spent   bool
	closed  bool
}

// Config configures a Meter.
type Config struct {
	// Step is how many units the Meter adds up before it settles them
	// (default 1: at every Add). The reservation's estimate should be at
	// least Step, so that it stays ahead of what the handler produces.
	Step int64
	// Finish lets a stream whose budget ran out finish, its usage charged
	// into debt, where by default Add then returns false: end the stream.
	Finish bool
}

// New returns a Meter over the reservation in ctx (ReservationFrom).
// Without one (no Config.Estimates, no rule applied, or the store failed
// open) it only counts, and Add always returns true.
func New(ctx context.Context, cfg Config) *Meter {
	res := admit.ReservationFrom(ctx)
	m := &Meter{res: res, step: max(cfg.Step, 1), finish: cfg.Finish}
	if res != nil {
		m.last = res.Decision
	}
	return m
}

// Add records n more units produced (n ≤ 0 adds nothing) and settles once
// Step units have accumulated. It returns false once a settle found the
// budget spent, unless Config.Finish: the handler should then end the
// stream with a well-formed end (a last event, the body's end). A settle
// the store fails is reported to the limiter's observer and lets the stream
// go on; the store reclaims what it holds after its time to live.
func (m *Meter) Add(ctx context.Context, n int64) bool {
	if n > 0 {
		m.used = min(m.used+n, maxUnits)
	}
	if m.res != nil && !m.closed && m.used-m.settled >= m.step {
		m.settle(ctx)
	}
	return !m.spent || m.finish
}

// maxUnits caps what a Meter counts: core's largest cost, 2^40.
const maxUnits = 1 << 40

func (m *Meter) settle(ctx context.Context) {
	d, err := m.res.Settle(ctx, m.used)
	m.settled = m.used
	if err != nil {
		return
	}
	m.last = d
	if !d.Allowed {
		m.spent = true
	}
}

// Close settles the total the handler produced, once (later calls return
// the same decision), and returns the standing as settled: what the
// response's closing fields report (see Field). It reports a store failure
// as the reservation does.
func (m *Meter) Close(ctx context.Context) (core.Decision, error) {
	if m.res == nil || m.closed {
		return m.last, nil
	}
	m.closed = true
	if m.used > m.settled {
		m.settle(ctx)
	}
	return m.last, m.res.Reconcile(context.WithoutCancel(ctx), m.used)
}

// Used returns the units added so far.
func (m *Meter) Used() int64 { return m.used }

// Field returns the standing as settled so far as an IETF RateLimit field
// value, "name";r=R;t=T, "" without a reservation: what a server-sent-events
// stream sends in its last event, or a chunked body in a RateLimit trailer
// (docs/streaming.md).
func (m *Meter) Field() string {
	d := m.last
	if m.res == nil || d.Policy == nil {
		return ""
	}
	t := fields.Seconds(d.ResetAfter)
	if !d.Allowed && !d.Impossible {
		t = max(fields.Seconds(d.RetryAfter), 1)
	}
	return string(fields.AppendItem(make([]byte, 0, 48), d.Policy.Name(), d.Remaining, t))
}
