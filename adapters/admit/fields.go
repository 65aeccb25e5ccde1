package admit

import (
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/fields"
)

// setFields sets the rate-limit fields of d, the decision to report, with t
// seconds until more quota, and Retry-After if retry > 0.
//
// An earlier sluice middleware on the request's path (a per-IP limit before
// authentication, a per-user one after it) may have set them already: the
// IETF fields are lists, to which each adds its own item; Retry-After is the
// longest wait of any; the older styles, one figure each, keep the most
// restrictive standing, the fewest remaining.
func (e *Engine) setFields(r *Request, w Writer, d *core.Decision, t, retry int64) {
	f := fieldSet{text: r.buf[:0]}
	if d.Limit != 0 && !e.fewerRemaining(w, d.Remaining) {
		if e.style == ietfHeaders {
			if prev := w.ResponseHeader(hdrRateLimit); prev != "" {
				f.text = append(append(f.text, prev...), ", "...)
			}
		}
		e.render(&f, d, t)
	}
	if retry > 0 {
		if prev, ok := parseCount(w.ResponseHeader(hdrRetryAfter)); ok && prev > retry {
			retry = prev
		}
		f.end(hdrRetryAfter, appendInt(f.text, retry))
	}
	if cap(f.text) > cap(r.buf) {
		r.buf = f.text // keep the grown buffer
	}
	var policy string
	if e.style == ietfHeaders && d.Limit != 0 {
		policy = e.policyValue(r)
		if prev := w.ResponseHeader(hdrPolicy); prev != "" {
			policy = prev + ", " + policy
		}
	}
	if policy != "" {
		w.SetHeader(hdrPolicy, policy)
	}
	if bw, ok := w.(BytesWriter); ok {
		each(&f, f.text, bw.SetHeaderBytes)
		return
	}
	each(&f, string(f.text), w.SetHeader)
}

// fields are the rate-limit fields of one response: their names, and their
// values as consecutive parts of text.
type fieldSet struct {
	names [4]string
	ends  [4]int // where each value ends in text
	n     int
	text  []byte
}

// end adds the field name, whose value ends the text, now text.
func (f *fieldSet) end(name string, text []byte) {
	f.text = text
	f.names[f.n], f.ends[f.n] = name, len(text)
	f.n++
}

// each calls set with every field, its value a part of all: the text, as
// bytes or a string.
func each[T string | []byte](f *fieldSet, all T, set func(name string, value T)) {
	start := 0
	for i := range f.n {
		set(f.names[i], all[start:f.ends[i]])
		start = f.ends[i]
	}
}

// render adds the rate-limit fields of d, with t seconds until more quota,
// to f, in the Config's style. An IETF RateLimit value is d's list member,
// added to whatever f.text holds.
func (e *Engine) render(f *fieldSet, d *core.Decision, t int64) {
	switch e.style {
	case ietfHeaders:
		f.end(hdrRateLimit, fields.AppendItem(f.text, d.Policy.Name(), d.Remaining, t))
	case draftHeaders:
		f.end(hdrLimit, appendInt(f.text, d.Limit))
		f.end(hdrRemaining, appendInt(f.text, d.Remaining))
		f.end(hdrReset, appendInt(f.text, t))
	case legacyHeaders:
		f.end(hdrXLimit, appendInt(f.text, d.Limit))
		f.end(hdrXRemaining, appendInt(f.text, d.Remaining))
		f.end(hdrXReset, appendInt(f.text, fields.Epoch(e.clock.Now().Add(time.Duration(t)*time.Second))))
	}
}

// fewerRemaining reports whether an earlier middleware set the one-figure
// fields of draftHeaders or legacyHeaders with fewer units remaining than
// remaining: its standing is the more restrictive, and stays.
func (e *Engine) fewerRemaining(w Writer, remaining int64) bool {
	var name string
	switch e.style {
	case draftHeaders:
		name = hdrRemaining
	case legacyHeaders:
		name = hdrXRemaining
	default:
		return false
	}
	prev, ok := parseCount(w.ResponseHeader(name))
	return ok && prev < remaining
}

// parseCount reads a field an earlier middleware set to a decimal count.
// Most responses have none: an empty value is no number, without the error
// strconv would allocate to say so.
func parseCount(v string) (int64, bool) {
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// policyValue returns the RateLimit-Policy value listing the policies that
// applied to r: precomputed when they are few (see buildPolicyTable), built
// for the request otherwise.
func (e *Engine) policyValue(r *Request) string {
	if e.policies != nil {
		return e.policies[r.combo]
	}
	var b []byte
	layer := 0
	for i := range e.rules {
		if r.mask&(1<<i) == 0 {
			continue
		}
		ru := &e.rules[i]
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
		b = fields.AppendSep(b)
	}
	return append(b, item...)
}

// policyItem renders p as a RateLimit-Policy list member: "name";q=Q;w=W.
func policyItem(p *core.Policy) string {
	return string(fields.AppendPolicy(nil, p.Name(), p.Burst(), fields.Seconds(p.Window())))
}

// seconds rounds d up to whole seconds.
func seconds(d time.Duration) int64 { return fields.Seconds(d) }

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
