package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// decide is Decide and DecideHTTP once the adapter's request is in r: it
// collects the rules that apply, takes their units as one, sets the
// rate-limit fields and answers a denial; then it takes the request's slot
// under Config.Concurrency, and answers a shed.
func (m *Middleware) decide(r *Request, w Writer) Verdict {
	if m.skip != nil && m.skip(r) {
		return Verdict{Proceed: true}
	}
	if err := m.collect(r); err != nil {
		return m.fail(r, w, err)
	}
	var (
		key   string
		class core.Class
		slot  bool // the request takes a slot
	)
	if m.slots != nil {
		var err error
		if key, class, slot, err = m.slotOf(r); err != nil {
			return m.fail(r, w, err)
		}
	}
	if r.mask == 0 {
		return m.pass(r, w, nil, nil, nil, key, class, slot)
	}

	var (
		d       core.Decision
		err     error
		res     *core.Reservation
		ctx     = r.view.Context()
		charged = r.mask&m.charged != 0
	)
	switch {
	case m.reserve || charged:
		res, err = m.limiter.Reserve(ctx, r.reqs, nil)
		if err == nil {
			d = res.Decision
		}
	case m.queues && !m.shadow:
		// Wait holds a request a LeakyQueue policy queues until its turn,
		// and decides every other at once, as TakeAll.
		d, err = m.limiter.TakeTurn(ctx, r.reqs, r.ds)
		r.decided = true
		if err != nil && ctx.Err() != nil {
			return gone(w) // its turn went back to the queue
		}
		if !d.Allowed {
			markDenied(r, &d)
		}
	case len(r.reqs) == 1:
		q := r.reqs[0]
		d, err = m.limiter.Take(ctx, core.Request{Key: q.Key, Policy: q.Policy, Cost: q.Cost})
	default:
		d, err = m.limiter.TakeAll(ctx, r.reqs, r.ds)
		r.decided = true
	}
	if err != nil {
		return m.fail(r, w, err)
	}

	if d.Allowed {
		m.setFields(r, w, &d, seconds(d.ResetAfter), 0, 0)
		var s *Settlement
		if charged {
			s = m.settlement(r, res, ctx)
		}
		return m.pass(r, w, &d, res, s, key, class, slot)
	}

	// Denied: by a policy (429), or by a store failure the limiter fails
	// closed on, which leaves no figures (503).
	den := &r.denial
	*den = Denial{Status: http.StatusTooManyRequests, Decision: d, r: r}
	if d.Degraded && d.Limit == 0 {
		den.Status = http.StatusServiceUnavailable
	}
	t := seconds(d.ResetAfter)
	if !d.Impossible {
		den.RetryAfter = max(seconds(d.RetryAfter), 1)
		t = den.RetryAfter
	}
	if m.shadow {
		m.setFields(r, w, &d, t, 0, 0)
		if slot {
			return m.admit(r, w, &d, nil, nil, key, class)
		}
		return Verdict{Proceed: true}
	}
	m.setFields(r, w, &d, t, den.RetryAfter, 2) // and Cache-Control, Content-Type
	w.SetHeader(hdrCacheControl, "no-store")
	writeResponse(w, m.deny(r, den), den.Status)
	return Verdict{}
}

// gone answers a request whose context ended while it waited, for its turn
// in a LeakyQueue policy's queue or for a slot of Config.Concurrency: its
// client is most likely gone, and nothing was served. What reaches the
// client, if anything, is a bare 503, rather than whatever the framework
// answers a handler that wrote nothing (net/http: 200).
func gone(w Writer) Verdict {
	w.SetHeader(hdrCacheControl, "no-store")
	w.WriteResponse(http.StatusServiceUnavailable, "", nil)
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

// slotOf returns the key and class r takes a slot of Config.Concurrency
// under, and whether it takes one at all.
func (m *Middleware) slotOf(r *Request) (key string, class core.Class, ok bool, err error) {
	if m.slotKey != nil {
		b, err := m.slotKey.AppendKey(r.key[:0], r)
		if err != nil {
			if errors.Is(err, ErrNoKey) {
				return "", 0, false, nil
			}
			return "", 0, false, &KeyError{Policy: concurrencyKeyName, Err: err}
		}
		if cap(b) > cap(r.key) {
			r.key = b[:0] // keep the grown buffer
		}
		if key = r.clientText; string(b) != key {
			key = string(b)
		}
	}
	if m.class != nil {
		if class = m.class(r); class > backpressure.Sheddable {
			return "", 0, false, fmt.Errorf("httplimit: Config.Class returned %v, which package backpressure does not know", class)
		}
	}
	return key, class, true, nil
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
func (m *Middleware) admit(r *Request, w Writer, d *core.Decision, res *core.Reservation, charge *Settlement, key string, class core.Class) Verdict {
	ctx := r.view.Context()
	p, err := m.slots.Acquire(ctx, key, class)
	if err == nil {
		s := charge
		if s == nil {
			s = m.newSettlement(ctx)
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
		return gone(w)
	}
	if m.shadow {
		if charge != nil {
			return Verdict{Proceed: true, Settlement: charge}
		}
		return Verdict{Proceed: true, Reservation: res}
	}
	if charge != nil {
		charge.refund()
	}
	den := &r.denial
	*den = Denial{Status: http.StatusServiceUnavailable, RetryAfter: max(seconds(rej.RetryAfter), 1), Shed: rej, r: r}
	if d != nil {
		den.Decision = *d
	}
	w.SetHeader(hdrRetryAfter, strconv.FormatInt(den.RetryAfter, 10))
	w.SetHeader(hdrCacheControl, "no-store")
	writeResponse(w, m.deny(r, den), den.Status)
	return Verdict{}
}

// collect gathers in r.reqs the requests of the rules that apply to r, and
// sets r.mask and r.combo.
func (m *Middleware) collect(r *Request) error {
	for i := range m.rules {
		ru := &m.rules[i]
		if ru.routes != nil {
			ok, err := matches(ru.routes, r)
			if err != nil && !(ru.Skip != nil && ru.Skip(r)) {
				return fmt.Errorf("httplimit: rule %d%s has Routes: %w", i, ru.label, err)
			}
			if !ok {
				continue
			}
		}
		if ru.Skip != nil && ru.Skip(r) {
			continue
		}
		cost := int64(1)
		if ru.Cost != nil {
			if cost = ru.Cost(r); cost <= 0 {
				continue
			}
		}
		p, j := ru.Policy, 0
		if ru.Select != nil {
			var err error
			if p, j, err = ru.choose(r); err != nil {
				if errors.Is(err, ErrNoKey) {
					continue
				}
				return &KeyError{Rule: i, Err: err, label: ru.label}
			}
		}
		key, err := ru.Key.AppendKey(r.key[:0], r)
		if err != nil {
			if errors.Is(err, ErrNoKey) {
				continue
			}
			return &KeyError{Policy: p.Name(), Err: err}
		}
		if cap(key) > cap(r.key) {
			r.key = key[:0] // keep the grown buffer
		}
		ks := r.clientText
		if string(key) != ks { // no allocation: a comparison
			ks = string(key)
		}
		r.reqs = append(r.reqs, core.Request{Key: ks, Policy: p, Cost: cost})
		r.mask |= 1 << i
		r.combo += ru.weight * (j + 1)
	}
	return nil
}

// choose returns the policy Select chooses for r, and its index in the
// rule's policies.
func (ru *rule) choose(r *Request) (*core.Policy, int, error) {
	p, err := ru.Select(r)
	if err != nil {
		return nil, 0, err
	}
	for j, q := range ru.policies {
		if q == p {
			return p, j, nil
		}
	}
	if p == nil {
		return nil, 0, fmt.Errorf("%w: nil", ErrUnlistedPolicy)
	}
	return nil, 0, fmt.Errorf("%w: %q", ErrUnlistedPolicy, p.Name())
}

// settlement returns the Settlement of a request whose rules in r.mask,
// some of which charge by the response's status, reserved res under the
// request's ctx.
func (m *Middleware) settlement(r *Request, res *core.Reservation, ctx context.Context) *Settlement {
	s := m.newSettlement(ctx)
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
func (m *Middleware) newSettlement(ctx context.Context) *Settlement {
	s, _ := m.settlements.Get().(*Settlement)
	if s == nil {
		s = &Settlement{m: m}
	}
	s.ctx = ctx
	return s
}

// Settlement is what a request took before the handler ran and settles
// once the response's status is known: a charge, kept or given back
// (Rule.Charge), and a slot of Config.Concurrency, given back with how the
// request went for the limit's algorithm. An adapter calls Settle once the
// next handler has returned or panicked, exactly once.
type Settlement struct {
	m   *Middleware
	ctx context.Context // the request's

	permit backpressure.Permit // the request's slot, if slot
	slot   bool

	res    *core.Reservation // the charge, if not nil
	mask   uint64            // the rules in the reservation, in order
	actual []int64           // each one's cost: the reserved, until settled
	buf    [4]int64          // actual's backing, for few rules
}

// Settle gives the slot back, telling the concurrency limit how the request
// went (see Result), then keeps or gives back the units of each rule with a
// Charge function. status is the status the client is answered with: the
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
			status = http.StatusInternalServerError
		}
		refund := false
		layer := 0
		for i := range s.m.rules {
			if s.mask&(1<<i) == 0 {
				continue
			}
			if charge := s.m.rules[i].Charge; charge != nil && !charge(status) {
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
func (s *Settlement) result(status int) backpressure.Outcome {
	err := s.ctx.Err()
	switch {
	case status == 0:
		return backpressure.Ignored
	case errors.Is(err, context.DeadlineExceeded):
		return backpressure.Dropped
	case err != nil:
		return backpressure.Ignored
	case status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout:
		return backpressure.Dropped
	}
	return backpressure.Succeeded
}

// refund gives back the units of every rule with a Charge function, for a
// request that was never served, and recycles s.
func (s *Settlement) refund() {
	layer := 0
	for i := range s.m.rules {
		if s.mask&(1<<i) == 0 {
			continue
		}
		if s.m.rules[i].Charge != nil {
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
	s.m.settlements.Put(s)
}

// fail answers a request no decision could be made for.
func (m *Middleware) fail(r *Request, w Writer, err error) Verdict {
	resp := m.onError(r, err)
	if resp == nil || m.shadow {
		return Verdict{Proceed: true}
	}
	w.SetHeader(hdrCacheControl, "no-store")
	writeResponse(w, *resp, http.StatusInternalServerError)
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

// Canonical names of the fields the middleware sets.
const (
	hdrPolicy       = "Ratelimit-Policy"
	hdrRateLimit    = "Ratelimit"
	hdrLimit        = "Ratelimit-Limit"
	hdrRemaining    = "Ratelimit-Remaining"
	hdrReset        = "Ratelimit-Reset"
	hdrXLimit       = "X-Ratelimit-Limit"
	hdrXRemaining   = "X-Ratelimit-Remaining"
	hdrXReset       = "X-Ratelimit-Reset"
	hdrRetryAfter   = "Retry-After"
	hdrCacheControl = "Cache-Control"
	hdrContentType  = "Content-Type"
)

// setFields sets the rate-limit fields of d, the decision to report, with t
// seconds until more quota, and Retry-After if retry > 0; extra is the number
// of fields the caller sets next.
func (m *Middleware) setFields(r *Request, w Writer, d *core.Decision, t, retry int64, extra int) {
	f := fields{text: r.buf[:0]}
	if d.Limit != 0 {
		switch m.style {
		case ietfHeaders:
			f.text = append(f.text, '"')
			f.text = append(f.text, d.Policy.Name()...)
			f.text = append(f.text, `";r=`...)
			f.text = appendInt(f.text, d.Remaining)
			f.text = append(f.text, ";t="...)
			f.end(hdrRateLimit, appendInt(f.text, t))
		case draftHeaders:
			f.end(hdrLimit, appendInt(f.text, d.Limit))
			f.end(hdrRemaining, appendInt(f.text, d.Remaining))
			f.end(hdrReset, appendInt(f.text, t))
		case legacyHeaders:
			f.end(hdrXLimit, appendInt(f.text, d.Limit))
			f.end(hdrXRemaining, appendInt(f.text, d.Remaining))
			f.end(hdrXReset, appendInt(f.text, epochCeil(m.clock.Now().Add(time.Duration(t)*time.Second))))
		}
	}
	if retry > 0 {
		f.end(hdrRetryAfter, appendInt(f.text, retry))
	}
	if cap(f.text) > cap(r.buf) {
		r.buf = f.text // keep the grown buffer
	}
	var policy string
	if m.style == ietfHeaders && d.Limit != 0 {
		policy = m.policyValue(r)
	}
	if s, ok := w.(*stdExchange); ok {
		s.setFields(policy, &f, extra)
		return
	}
	if policy != "" {
		w.SetHeader(hdrPolicy, policy)
	}
	if bw, ok := w.(headerBytesWriter); ok {
		each(&f, f.text, bw.SetHeaderBytes)
		return
	}
	each(&f, string(f.text), w.SetHeader)
}

// fields are the rate-limit fields of one response: their names, and their
// values as consecutive parts of text.
type fields struct {
	names [4]string
	ends  [4]int // where each value ends in text
	n     int
	text  []byte
}

// end adds the field name, whose value ends the text, now text.
func (f *fields) end(name string, text []byte) {
	f.text = text
	f.names[f.n], f.ends[f.n] = name, len(text)
	f.n++
}

// each calls set with every field, its value a part of all: the text, as
// bytes or a string.
func each[T string | []byte](f *fields, all T, set func(name string, value T)) {
	start := 0
	for i := range f.n {
		set(f.names[i], all[start:f.ends[i]])
		start = f.ends[i]
	}
}

// policyValue returns the RateLimit-Policy value listing the policies that
// applied to r: precomputed when they are few (see buildPolicyTable), built
// for the request otherwise.
func (m *Middleware) policyValue(r *Request) string {
	if m.policies != nil {
		return m.policies[r.combo]
	}
	var b []byte
	layer := 0
	for i := range m.rules {
		if r.mask&(1<<i) == 0 {
			continue
		}
		ru := &m.rules[i]
		for j, p := range ru.policies {
			if p == r.reqs[layer].Policy {
				b = appendItem(b, ru.items[j])
			}
		}
		layer++
	}
	return string(b)
}

// appendItem appends a RateLimit-Policy list member to the list in b.
func appendItem(b []byte, item string) []byte {
	if len(b) > 0 {
		b = append(b, ", "...)
	}
	return append(b, item...)
}

// policyItem renders p as a RateLimit-Policy list member: "name";q=Q;w=W.
func policyItem(p *core.Policy) string {
	b := append([]byte{'"'}, p.Name()...)
	b = append(b, `";q=`...)
	b = appendInt(b, p.Burst())
	b = append(b, ";w="...)
	b = appendInt(b, seconds(p.Window()))
	return string(b)
}

// seconds rounds d up to whole seconds.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// epochCeil returns t in Unix seconds, rounded up.
func epochCeil(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}
