package admit

import (
	"context"
	"errors"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// Settlement is what a request took before the handler ran and settles
// once the response's status is known: a charge, kept or given back
// (Rule.Charge), and a slot of Config.Concurrency, given back with how the
// request went for the limit's algorithm. An adapter calls Settle once the
// next handler has returned or panicked, exactly once.
type Settlement struct {
	e   *Engine
	ctx context.Context // the request's

	permit backpressure.Permit // the request's slot, if slot
	slot   bool

	res    *core.Reservation // the charge, if not nil
	mask   uint64            // the rules in the reservation, in order
	actual []int64           // each one's cost: the reserved, until settled
	buf    [4]int64          // actual's backing, for few rules

	reported reported // the fields set for the charge, see SetFields
}

// Settle gives the slot back, telling the concurrency limit how the request
// went (see core.Outcome), then keeps or gives back the units of
// each rule with a Charge function. status is the status the client is answered with: the
// one the response was written with, 200 if the handler wrote none; for a
// framework whose handlers return errors, the status its error handler
// answers the error with. A status of 0 (the handler panicked) counts as 500
// for Charge, and as saying nothing about load for a slot. Settle may call
// the store (a refund) under a context that outlives the request's. Units
// whose give-back fails stay taken; the limiter reports the failure to its
// observer. The Settlement is reused once settled.
func (s *Settlement) Settle(status int) {
	if s.slot {
		s.permit.Done(s.result(status))
	}
	if s.res != nil {
		if status == 0 {
			status = statusInternalError
		}
		refund := false
		layer := 0
		for i := range s.e.rules {
			if s.mask&(1<<i) == 0 {
				continue
			}
			if s.e.rules[i].Charge != nil && !s.charge(i, status) {
				s.actual[layer] = 0
				refund = true
			}
			layer++
		}
		if refund {
			s.reconcile()
		}
	}
	s.recycle()
}

// result is how a request answered with status went, for the concurrency
// limit's algorithm: Dropped when it says the service is overloaded (its
// deadline passed, or it was answered 503 or 504, as a dependency or
// http.TimeoutHandler answers); Ignored when it says nothing about load
// (the handler panicked, a bug; the client went away, and the handler may
// have stopped early); Succeeded otherwise, its latency measured.
func (s *Settlement) result(status int) core.Outcome {
	err := s.ctx.Err()
	switch {
	case status == 0:
		return core.Ignored
	case errors.Is(err, context.DeadlineExceeded):
		return core.Failed
	case err != nil:
		return core.Ignored
	case status == statusUnavailable || status == statusGatewayTimeout:
		return core.Failed
	}
	return core.Succeeded
}

// refund gives back the units of every rule with a Charge function, for a
// request that was never served, and recycles s.
func (s *Settlement) refund() {
	layer := 0
	for i := range s.e.rules {
		if s.mask&(1<<i) == 0 {
			continue
		}
		if s.e.rules[i].Charge != nil {
			s.actual[layer] = 0
		}
		layer++
	}
	s.reconcile()
	s.recycle()
}

// reconcile settles the reservation at s.actual.
func (s *Settlement) reconcile() {
	// After the handler, the request's context may be done (net/http
	// cancels it when the client goes): the units must go back anyway.
	_ = s.res.ReconcileEach(context.WithoutCancel(s.ctx), s.actual)
}

// recycle puts s back in the pool, holding nothing of its request.
func (s *Settlement) recycle() {
	s.ctx, s.res, s.actual, s.permit, s.slot, s.mask = nil, nil, nil, backpressure.Permit{}, false, 0
	s.reported = reported{}
	s.e.settlements.Put(s)
}

// settlement returns the Settlement of a request whose rules in r.mask,
// some of which charge by the response's status, reserved res under the
// request's ctx.
func (e *Engine) settlement(r *Request, res *core.Reservation, ctx context.Context) *Settlement {
	s := e.newSettlement(ctx)
	s.res, s.mask = res, r.mask
	if len(r.reqs) <= len(s.buf) {
		s.actual = s.buf[:len(r.reqs)]
	} else {
		s.actual = make([]int64, len(r.reqs))
	}
	for i, q := range r.reqs {
		s.actual[i] = q.Cost
	}
	return s
}

// newSettlement returns a pooled settlement for a request decided under
// ctx: a Settlement is settled once, after which it goes back to the pool.
func (e *Engine) newSettlement(ctx context.Context) *Settlement {
	s, _ := e.settlements.Get().(*Settlement)
	if s == nil {
		s = &Settlement{e: e}
	}
	s.ctx = ctx
	return s
}
