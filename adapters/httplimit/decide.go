package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sluice-go/sluice/adapters/adapterkit"
	"github.com/sluice-go/sluice/core"
)

// decide is Decide and DecideHTTP once the adapter's request is in r: it
// collects the rules that apply, takes their units as one, sets the
// rate-limit fields and answers a denial.
func (m *middleware) decide(r *Request, w adapterkit.Writer) adapterkit.Verdict {
	if m.skip != nil && m.skip(r) {
		return adapterkit.Verdict{Proceed: true}
	}
	if err := m.collect(r); err != nil {
		return m.fail(r, w, err)
	}
	if r.mask == 0 {
		return adapterkit.Verdict{Proceed: true}
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
		res, err = m.limiter.Reserve(ctx, r.reqs...)
		if err == nil {
			d = res.Decision
		}
	case len(r.reqs) == 1:
		q := r.reqs[0]
		d, err = m.limiter.Take(ctx, q.Key, q.Policy, q.Cost)
	default:
		d, err = m.limiter.TakeAll(ctx, r.reqs, r.ds)
		r.decided = true
	}
	if err != nil {
		return m.fail(r, w, err)
	}

	if d.Allowed {
		m.setFields(r, w, &d, seconds(d.ResetAfter), 0, 0)
		if charged {
			return adapterkit.Verdict{Proceed: true, Settlement: m.settlement(r, res, ctx)}
		}
		return adapterkit.Verdict{Proceed: true, Reservation: res}
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
		return adapterkit.Verdict{Proceed: true}
	}
	m.setFields(r, w, &d, t, den.RetryAfter, 2) // and Cache-Control, Content-Type
	w.SetHeader(hdrCacheControl, "no-store")
	writeResponse(w, m.deny(r, den), den.Status)
	return adapterkit.Verdict{}
}

// collect gathers in r.reqs the requests of the rules that apply to r, and
// sets r.mask and r.combo.
func (m *middleware) collect(r *Request) error {
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
				return &SelectError{Rule: i, Err: err, label: ru.label}
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
func (m *middleware) settlement(r *Request, res *core.Reservation, ctx context.Context) *settlement {
	s := &settlement{m: m, res: res, ctx: ctx, mask: r.mask}
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

// settlement is the adapterkit.Settlement of a request some of whose rules
// charge by the response's status: the units are reserved, and given back
// under the rules whose Charge function declines the status.
type settlement struct {
	m      *middleware
	res    *core.Reservation
	ctx    context.Context // the request's
	mask   uint64          // the rules in the reservation, in order
	actual []int64         // each one's cost: the reserved, until settled
	buf    [4]int64        // actual's backing, for few rules
}

// Settle keeps or gives back the units of each rule with a Charge function.
// A status of 0 (the handler panicked) counts as 500. Units whose give-back
// fails stay taken; the limiter reports the failure to its observer.
func (s *settlement) Settle(status int) {
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
		// After the handler, the request's context may be done (net/http
		// cancels it when the client goes): the units must go back anyway.
		_ = s.res.ReconcileEach(context.WithoutCancel(s.ctx), s.actual)
	}
}

// fail answers a request no decision could be made for.
func (m *middleware) fail(r *Request, w adapterkit.Writer, err error) adapterkit.Verdict {
	resp := m.onError(r, err)
	if resp == nil || m.shadow {
		return adapterkit.Verdict{Proceed: true}
	}
	w.SetHeader(hdrCacheControl, "no-store")
	writeResponse(w, *resp, http.StatusInternalServerError)
	return adapterkit.Verdict{}
}

// writeResponse writes resp, with status fallback if resp's is not a valid
// status code (net/http would panic on it).
func writeResponse(w adapterkit.Writer, resp Response, fallback int) {
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
func (m *middleware) setFields(r *Request, w adapterkit.Writer, d *core.Decision, t, retry int64, extra int) {
	f := fields{text: r.buf[:0]}
	if d.Limit != 0 {
		switch m.style {
		case IETFHeaders:
			f.text = append(f.text, '"')
			f.text = append(f.text, d.Policy.Name()...)
			f.text = append(f.text, `";r=`...)
			f.text = appendInt(f.text, d.Remaining)
			f.text = append(f.text, ";t="...)
			f.end(hdrRateLimit, appendInt(f.text, t))
		case DraftHeaders:
			f.end(hdrLimit, appendInt(f.text, d.Limit))
			f.end(hdrRemaining, appendInt(f.text, d.Remaining))
			f.end(hdrReset, appendInt(f.text, t))
		case LegacyHeaders:
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
	if m.style == IETFHeaders && d.Limit != 0 {
		policy = m.policyValue(r)
	}
	if s, ok := w.(*stdExchange); ok {
		s.setFields(policy, &f, extra)
		return
	}
	if policy != "" {
		w.SetHeader(hdrPolicy, policy)
	}
	if bw, ok := w.(adapterkit.HeaderBytesWriter); ok {
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
func (m *middleware) policyValue(r *Request) string {
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
