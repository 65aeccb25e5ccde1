package admit

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// decide is Decide and DecideHTTP once the adapter's request is in r: it
// collects the rules that apply, takes their units as one, sets the
// rate-limit fields and answers a denial; then it takes the request's slot
// under Config.Concurrency, and answers a shed.
func (e *Engine) decide(r *Request, w Writer) Verdict {
	if e.skip != nil && e.skip(r) {
		return Verdict{Proceed: true}
	}
	if err := e.collect(r); err != nil {
		return e.fail(r, w, err)
	}
	var sl slotReq
	if e.slots != nil {
		var err error
		if sl, err = e.slotOf(r); err != nil {
			return e.fail(r, w, err)
		}
	}
	if r.mask == 0 {
		if len(r.shadow) > 0 {
			e.takeShadow(r)
		}
		return e.pass(r, w, nil, nil, nil, sl)
	}
	d, res, left, err := e.take(r)
	if r.x != nil {
		r.x.taken(d, err)
	}
	switch {
	case left:
		return gone(w) // its turn went back to the queue
	case err != nil:
		return e.fail(r, w, err)
	case !d.Allowed:
		return e.denied(r, w, &d, sl)
	}
	if len(r.shadow) > 0 {
		e.takeShadow(r) // the enforced layers allowed it
	}
	e.setFields(r, w, &d, seconds(d.ResetAfter), 0)
	var s *Settlement
	if r.mask&e.charged != 0 {
		s = e.settlement(r, res, r.view.Context())
		s.report(r, &d)
	}
	return e.pass(r, w, &d, res, s, sl)
}

// take takes the units of the rules that apply to r as one: reserved
// under Config.Estimates or a rule with Charge, held for a LeakyQueue
// policy's turn, taken otherwise. left reports a request whose context
// was canceled while it waited for its turn (one whose deadline passed is
// denied, its turn as Retry-After).
func (e *Engine) take(r *Request) (d core.Decision, res *core.Reservation, left bool, err error) {
	ctx := r.view.Context()
	switch {
	case e.reserve || r.mask&e.charged != 0:
		res, err = e.limiter.Reserve(ctx, r.reqs, r.ds)
		if err == nil {
			d, r.decided = res.Decision, true
		}
	case e.queues && !e.shadow:
		// Wait holds a request a LeakyQueue policy queues until its turn,
		// and decides every other at once, as TakeAll.
		d, err = e.limiter.TakeTurn(ctx, r.reqs, r.ds)
		r.decided = true
		if err != nil && ctx.Err() != nil {
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return d, nil, true, err
			}
			// The server's deadline passed before the turn (its turn went
			// back): denied as a deadline known up front is, with the turn
			// as its advice. The client is still there to read it.
			d.Allowed, d.RetryAfter, d.Delay, err = false, d.Delay, 0, nil
		}
		if !d.Allowed {
			markDenied(r, &d)
		}
	case len(r.reqs) == 1:
		q := r.reqs[0]
		d, err = e.limiter.Take(ctx, core.Request{Key: q.Key, Policy: q.Policy, Cost: q.Cost})
	default:
		d, err = e.limiter.TakeAll(ctx, r.reqs, r.ds)
		r.decided = true
	}
	return d, res, false, err
}

// denied answers a request the rules denied with d: by a policy (429), or
// by a store failure the limiter fails closed on, which leaves no figures
// (503). In shadow mode it proceeds, with the fields set, to take its slot.
func (e *Engine) denied(r *Request, w Writer, d *core.Decision, sl slotReq) Verdict {
	den := &r.denial
	*den = Denial{Status: statusTooManyRequests, Decision: *d, r: r}
	if d.Degraded && d.Limit == 0 {
		den.Status = statusUnavailable
	}
	t := seconds(d.ResetAfter)
	if !d.Impossible {
		den.RetryAfter = max(seconds(d.RetryAfter), 1)
		t = den.RetryAfter
	}
	if e.shadow {
		e.setFields(r, w, d, t, 0)
		if sl.ok {
			return e.admit(r, w, d, nil, nil, sl)
		}
		return Verdict{Proceed: true}
	}
	e.setFields(r, w, d, t, den.RetryAfter) // and Cache-Control, Content-Type
	w.SetHeader(hdrCacheControl, "no-store")
	writeResponse(w, e.deny(r, den), den.Status)
	return Verdict{}
}

// gone answers a request whose context was canceled while it waited, for
// its turn in a LeakyQueue policy's queue or for a slot of
// Config.Concurrency: its client is most likely gone, and nothing was
// served. What reaches the client, if anything, is a bare 503, rather than
// whatever the framework answers a handler that wrote nothing (net/http:
// 200). A request whose deadline passed instead is answered as shed or
// denied, with its Retry-After: only a client gone gets a bare answer.
func gone(w Writer) Verdict {
	w.SetHeader(hdrCacheControl, "no-store")
	w.WriteResponse(statusUnavailable, "", nil)
	return Verdict{}
}

// markDenied marks, in r.ds, the layer whose decision Wait denied up front
// (a turn past the request's deadline) as denied, as the store marks the
// layers it denies: Denial.Violated names it.
func markDenied(r *Request, d *core.Decision) {
	for i := range r.reqs {
		if r.ds[i].Allowed && r.ds[i].Policy == d.Policy {
			r.ds[i].Allowed = false
		}
	}
}

// slotReq is the slot of Config.Concurrency a request takes, if ok: its
// key and class.
type slotReq struct {
	key   string
	class core.Class
	ok    bool
}

// slotOf returns the slot r takes under Config.Concurrency, if any.
func (e *Engine) slotOf(r *Request) (slotReq, error) {
	var sl slotReq
	if e.slotKey != nil {
		b, err := e.slotKey.AppendKey(r.key[:0], r)
		if err != nil {
			if errors.Is(err, ErrNoKey) {
				return slotReq{}, nil
			}
			return slotReq{}, &KeyError{Rule: -1, Policy: concurrencyKeyName, Err: err}
		}
		if cap(b) > cap(r.key) {
			r.key = b[:0] // keep the grown buffer
		}
		sl.key = r.keyString(b)
	}
	if e.class != nil {
		if sl.class = e.class(r); sl.class > core.Sheddable {
			return slotReq{}, fmt.Errorf("admit: Config.Class returned %v, which package backpressure does not know", sl.class)
		}
	}
	sl.ok = true
	return sl, nil
}

// concurrencyKeyName stands for the policy name in the KeyError of a
// ConcurrencyKey.
const concurrencyKeyName = "(concurrency)"

// admit takes r's slot under Config.Concurrency, after the rules allowed
// it with d (nil if no rule applied), reserving res under Config.Estimates,
// or charge under rules with Charge. It returns the Verdict of a request
// that proceeds holding its slot, released by the Settlement, which also
// settles charge, if not nil. A request the limit sheds is answered 503,
// unless in shadow mode, and its charge given back: it was never served.
func (e *Engine) admit(r *Request, w Writer, d *core.Decision, res *core.Reservation, charge *Settlement, sl slotReq) Verdict {
	ctx := r.view.Context()
	p, err := e.slots.Acquire(ctx, sl.key, sl.class)
	if err == nil {
		s := charge
		if s == nil {
			s = e.newSettlement(ctx)
		} else {
			res = nil // settled by the charge
		}
		s.permit, s.slot = p, true
		return Verdict{Proceed: true, Reservation: res, Settlement: s}
	}
	var rej *backpressure.ShedError
	if !errors.As(err, &rej) {
		if charge != nil {
			charge.refund()
		}
		if ctx.Err() == nil { // the slots could not be asked
			return e.fail(r, w, fmt.Errorf("admit: concurrency slots: %w", err))
		}
		return gone(w)
	}
	if e.shadow {
		if charge != nil {
			return Verdict{Proceed: true, Settlement: charge}
		}
		return Verdict{Proceed: true, Reservation: res}
	}
	if charge != nil {
		charge.refund()
	}
	return e.shed(r, w, d, Denial{Status: statusUnavailable, RetryAfter: max(seconds(rej.RetryAfter), 1), Shed: rej})
}

// shed answers a request shed after the rules allowed it with d (nil if
// no rule applied), as den says: 503, Retry-After and the Deny function's
// body.
func (e *Engine) shed(r *Request, w Writer, d *core.Decision, den Denial) Verdict {
	den.r = r
	if d != nil {
		den.Decision = *d
	}
	r.denial = den
	w.SetHeader(hdrRetryAfter, strconv.FormatInt(den.RetryAfter, 10))
	w.SetHeader(hdrCacheControl, "no-store")
	writeResponse(w, e.deny(r, &r.denial), den.Status)
	return Verdict{}
}

// fail answers a request no decision could be made for.
func (e *Engine) fail(r *Request, w Writer, err error) Verdict {
	if errors.Is(err, ErrRouteUnknown) && !e.misplaced.Swap(true) {
		e.logMisplaced(r, err)
	}
	resp := e.onError(r, err)
	if resp == nil || e.shadow {
		return Verdict{Proceed: true}
	}
	w.SetHeader(hdrCacheControl, "no-store")
	writeResponse(w, *resp, statusInternalError)
	return Verdict{}
}

// writeResponse writes resp, with status fallback if resp's is not a valid
// status code (net/http would panic on it).
func writeResponse(w Writer, resp Response, fallback int) {
	if resp.Status < 100 || resp.Status > 999 {
		resp.Status = fallback
	}
	w.WriteResponse(resp.Status, resp.ContentType, resp.Body)
}
