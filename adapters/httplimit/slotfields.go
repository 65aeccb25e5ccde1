package httplimit

import (
	"strconv"

	"github.com/sluice-go/sluice/core"
)

// ConcurrencyPolicy is the name Config.AdvertiseConcurrency publishes the
// concurrency limit under, in RateLimit-Policy and RateLimit.
const ConcurrencyPolicy = "concurrency"

// advertiseSlots publishes, on the response of a request that took a slot
// under Config.Concurrency, the limit's current value as a quota of
// concurrent requests, the RateLimit draft's qu="concurrent-requests":
//
//	RateLimit-Policy: "per-ip";q=10;w=5, "concurrency";q=64;qu="concurrent-requests"
//	RateLimit: "per-ip";r=9;t=1, "concurrency";r=63;t=0
//
// q is the limit (static, or where an adaptive algorithm has moved it), r
// the slots free once this request has taken its own, t 0: a slot comes
// back as soon as a request ends. The rules' items, if any applied, come
// first, as Decide set them (d is their reported decision, nil if no rule
// applied). The fields are set again whole, since a Writer can only
// replace a field.
func (m *Middleware) advertiseSlots(r *Request, w Writer, d *core.Decision) {
	limit := m.slots.Limit()
	free := max(limit-m.slots.InFlight(), 0)
	policy := r.buf[:0]
	if d != nil && d.Limit != 0 {
		policy = append(policy, m.policyValue(r)...)
		policy = append(policy, ", "...)
	}
	policy = append(policy, `"`+ConcurrencyPolicy+`";q=`...)
	policy = strconv.AppendInt(policy, int64(limit), 10)
	policy = append(policy, `;qu="concurrent-requests"`...)
	n := len(policy)
	value := policy
	if d != nil && d.Limit != 0 {
		value = append(value, '"')
		value = append(value, d.Policy.Name()...)
		value = append(value, `";r=`...)
		value = appendInt(value, d.Remaining)
		value = append(value, ";t="...)
		value = appendInt(value, seconds(d.ResetAfter))
		value = append(value, ", "...)
	}
	value = append(value, `"`+ConcurrencyPolicy+`";r=`...)
	value = strconv.AppendInt(value, int64(free), 10)
	value = append(value, ";t=0"...)
	r.buf = value
	w.SetHeader(hdrPolicy, string(value[:n]))
	w.SetHeader(hdrRateLimit, string(value[n:]))
}
