package httplimit

import (
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
	mask, err := m.collect(r)
	if err != nil {
		return m.fail(r, w, err)
	}
	if mask == 0 {
		return adapterkit.Verdict{Proceed: true}
	}

	var (
		d   core.Decision
		res *core.Reservation
		ctx = r.view.Context()
	)
	switch {
	case m.reserve:
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
		m.setFields(r, w, mask, &d, seconds(d.ResetAfter), 0, 0)
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
		m.setFields(r, w, mask, &d, t, 0, 0)
		return adapterkit.Verdict{Proceed: true}
	}
	m.setFields(r, w, mask, &d, t, den.RetryAfter, 2) // and Cache-Control, Content-Type
	w.SetHeader(hdrCacheControl, "no-store")
	writeResponse(w, m.deny(r, den), den.Status)
	return adapterkit.Verdict{}
}

// collect gathers in r.reqs the requests of the rules that apply to r and
// returns their mask.
func (m *middleware) collect(r *Request) (uint64, error) {
	var mask uint64
	for i := range m.rules {
		ru := &m.rules[i]
		if ru.routes != nil {
			ok, err := matches(ru.routes, r)
			if err != nil && !(ru.Skip != nil && ru.Skip(r)) {
				return 0, fmt.Errorf("httplimit: rule %d (%s) has Routes: %w", i, ru.Policy.Name(), err)
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
		key, err := ru.Key.AppendKey(r.key[:0], r)
		if err != nil {
			if errors.Is(err, ErrNoKey) {
				continue
			}
			return 0, &KeyError{Policy: ru.Policy.Name(), Err: err}
		}
		if cap(key) > cap(r.key) {
			r.key = key[:0] // keep the grown buffer
		}
		ks := r.clientText
		if string(key) != ks { // no allocation: a comparison
			ks = string(key)
		}
		r.reqs = append(r.reqs, core.Request{Key: ks, Policy: ru.Policy, Cost: cost})
		mask |= 1 << i
	}
	return mask, nil
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
func (m *middleware) setFields(r *Request, w adapterkit.Writer, mask uint64, d *core.Decision, t, retry int64, extra int) {
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
		policy = m.policyValue(mask)
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

// policyValue returns the RateLimit-Policy value listing the rules in mask:
// precomputed when the rules are few (see middleware.policies), built for
// the request otherwise.
func (m *middleware) policyValue(mask uint64) string {
	if m.policies != nil {
		return m.policies[mask]
	}
	return m.policyList(mask)
}

// policyList renders the RateLimit-Policy value listing the rules in mask.
func (m *middleware) policyList(mask uint64) string {
	var b []byte
	for i := range m.rules {
		if mask&(1<<i) == 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ", "...)
		}
		b = append(b, m.rules[i].item...)
	}
	return string(b)
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
