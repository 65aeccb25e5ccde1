package admit

import "github.com/sluice-go/sluice/fields"

// concurrencyPolicy is the name Config.AdvertiseConcurrency publishes the
// concurrency limit under, in RateLimit-Policy and RateLimit.
const concurrencyPolicy = "concurrency"

// advertiseSlots publishes, on the response of a request that took a slot
// under Config.Concurrency, the limit's current value as a quota of
// concurrent requests, the RateLimit draft's qu="concurrent-requests":
//
//	RateLimit-Policy: "per-ip";q=10;w=5, "concurrency";q=64;qu="concurrent-requests"
//	RateLimit: "per-ip";r=9;t=1, "concurrency";r=63;t=0
//
// q is the limit (static, or where an adaptive algorithm has moved it), r
// the slots free once this request has taken its own, t 0: a slot comes
// back as soon as a request ends. The item follows those already in the
// fields, as setFields left them: the rules' of this middleware, and of
// any sluice middleware earlier on the request's path. A Writer can only
// replace a field, so each is set again whole.
func (e *Engine) advertiseSlots(r *Request, w Writer) {
	g := e.slots.(SlotGauge) // New checked
	limit := g.Limit()
	free := max(limit-g.InFlight(), 0)
	policy := fields.AppendConcurrentPolicy(appendListed(r.buf[:0], w.ResponseHeader(hdrPolicy)), concurrencyPolicy, int64(limit))
	n := len(policy)
	value := fields.AppendItem(appendListed(policy, w.ResponseHeader(hdrRateLimit)), concurrencyPolicy, int64(free), 0)
	r.buf = value
	w.SetHeader(hdrPolicy, string(value[:n]))
	w.SetHeader(hdrRateLimit, string(value[n:]))
}

// appendListed appends list, a field's list so far, and the separator
// before the next member, to b; nothing if list is empty.
func appendListed(b []byte, list string) []byte {
	if list == "" {
		return b
	}
	return fields.AppendSep(append(b, list...))
}
