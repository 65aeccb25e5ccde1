package httplimit

import (
	"errors"
	"net/http"
	"time"

	"github.com/sluice-go/sluice/core"
)

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

func (m *Middleware) decide(r *Request, w Writer) Verdict {
	if m.skip != nil && m.skip(r) {
		return Verdict{Proceed: true}
	}
	mask, err := m.collect(r)
	if err != nil {
		return m.fail(r, w, err)
	}
	if mask == 0 {
		return Verdict{Proceed: true}
	}

	var (
		d   core.Decision
		res *core.Reservation
		ctx = r.Context()
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
		r.ds[0], r.decided = d, true
	default:
		d, err = m.limiter.TakeAll(ctx, r.reqs, r.ds)
		r.decided = true
	}
	if err != nil {
		return m.fail(r, w, err)
	}

	if d.Allowed {
		m.setFields(r, w, mask, &d, seconds(d.ResetAfter), 0, 0)
		return Verdict{Proceed: true, Reservation: res}
	}

	// Denied: by a policy (429), or by a store failure the limiter fails
	// closed on, which leaves no figures (503).
	den := Denial{Status: http.StatusTooManyRequests, Decision: d, r: r}
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
		return Verdict{Proceed: true}
	}
	m.setFields(r, w, mask, &d, t, den.RetryAfter, 2) // and Cache-Control, Content-Type
	w.SetHeader(hdrCacheControl, "no-store")
	writeResponse(w, m.deny(r, &den), den.Status)
	return Verdict{}
}

// collect gathers in r.reqs the requests of the rules that apply to r and
// returns their mask.
func (m *Middleware) collect(r *Request) (uint64, error) {
	var mask uint64
	for i := range m.rules {
		ru := &m.rules[i]
		if ru.routes != nil {
			if _, ok := ru.routes[r.Route()]; !ok {
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
		r.keyHint = ""
		key, err := ru.Key(r.key[:0], r)
		if err != nil {
			if errors.Is(err, ErrNoKey) {
				continue
			}
			return 0, &KeyError{Policy: ru.Policy.Name(), Err: err}
		}
		r.key = key[:0]
		ks := r.keyHint
		if string(key) != ks { // no allocation: a comparison
			ks = string(key)
		}
		r.reqs = append(r.reqs, core.Request{Key: ks, Policy: ru.Policy, Cost: cost})
		mask |= 1 << i
	}
	return mask, nil
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

// headerSizer is implemented by Writers that benefit from knowing how many
// header fields are coming (stdExchange allocates their values at once).
type headerSizer interface{ expectHeaders(n int) }

// setFields sets the rate-limit fields of d, the decision to report, with t
// seconds until more quota, and Retry-After if retry > 0; extra is the number
// of fields the caller sets next. Every dynamic value is appended to r.buf
// and converted to one string, which the values are slices of.
func (m *Middleware) setFields(r *Request, w Writer, mask uint64, d *core.Decision, t, retry int64, extra int) {
	var (
		names [4]string
		ends  [4]int
		n     int
		b     = r.buf[:0]
	)
	value := func(name string) { names[n], ends[n] = name, len(b); n++ }
	if d.Limit != 0 {
		switch m.style {
		case IETFHeaders:
			b = append(b, '"')
			b = append(b, d.Policy.Name()...)
			b = append(b, `";r=`...)
			b = appendInt(b, d.Remaining)
			b = append(b, ";t="...)
			b = appendInt(b, t)
			value(hdrRateLimit)
		case DraftHeaders:
			b = appendInt(b, d.Limit)
			value(hdrLimit)
			b = appendInt(b, d.Remaining)
			value(hdrRemaining)
			b = appendInt(b, t)
			value(hdrReset)
		case LegacyHeaders:
			b = appendInt(b, d.Limit)
			value(hdrXLimit)
			b = appendInt(b, d.Remaining)
			value(hdrXRemaining)
			b = appendInt(b, epochCeil(m.clock.Now().Add(time.Duration(t)*time.Second)))
			value(hdrXReset)
		}
	}
	if retry > 0 {
		b = appendInt(b, retry)
		value(hdrRetryAfter)
	}
	policy := m.style == IETFHeaders && d.Limit != 0
	if hs, ok := w.(headerSizer); ok {
		hs.expectHeaders(n + extra + btoi(policy))
	}
	if policy {
		w.SetHeader(hdrPolicy, m.policyValue(mask))
	}
	if n > 0 {
		all, start := string(b), 0
		for i := range n {
			w.SetHeader(names[i], all[start:ends[i]])
			start = ends[i]
		}
	}
	r.buf = b
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// policyValue returns the RateLimit-Policy value listing the rules in mask.
func (m *Middleware) policyValue(mask uint64) string {
	if m.policies != nil {
		return m.policies[mask]
	}
	return m.policyList(mask)
}

func (m *Middleware) policyList(mask uint64) string {
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
