package admit

import (
	"iter"
	"strconv"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// Denial describes a denied request to Config.Deny: one the Rules refused,
// or one Config.Concurrency shed. It is only valid during that call.
type Denial struct {
	// Status is the status to answer: 429; 503 when the store failed and
	// the limiter fails closed, or when Config.Concurrency shed the request.
	Status int
	// Decision is the reported decision, the most restrictive one. For a
	// shed request, it is the Rules' decision, which allowed it (the zero
	// Decision if no rule applied).
	Decision core.Decision
	// RetryAfter is the Retry-After value in seconds, 0 when none is sent
	// (the request costs more than a policy ever grants).
	RetryAfter int64
	// Shed, if not nil, says the Rules allowed the request but the service
	// is saturated: Config.Concurrency shed it, for the reason and class it
	// gives. The client did nothing wrong, and may come back after
	// RetryAfter.
	Shed *backpressure.ShedError
	// Dependency, if not empty, names the dependency (Dependency.Name) the
	// request was shed for: the Rules allowed it, but a dependency its
	// route calls has less capacity than it needs (see
	// Config.Dependencies). It was answered 503 at once, and the client
	// may come back after RetryAfter.
	Dependency string

	r *Request
}

// Violated yields the names of the policies that refused the request, in
// rule order; none for a 503.
func (d *Denial) Violated() iter.Seq[string] {
	return func(yield func(string) bool) {
		for i, q := range d.r.reqs {
			if d.violated(i) && !yield(q.Policy.Name()) {
				return
			}
		}
	}
}

// Cost returns the units the request asked of the reported policy.
func (d *Denial) Cost() int64 {
	for _, q := range d.r.reqs {
		if q.Policy == d.Decision.Policy {
			return q.Cost
		}
	}
	return 0
}

// violated reports whether the request's i-th rule refused it.
func (d *Denial) violated(i int) bool {
	switch {
	case d.Status != statusTooManyRequests:
		return false
	case !d.r.decided: // a reservation reports only its decisive policy
		return d.r.reqs[i].Policy == d.Decision.Policy
	default:
		return !d.r.ds[i].Allowed
	}
}

func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }

// bareDeny is the Config.Deny of a protocol layer that sets none: the
// status alone, which the layer maps to its own (httplimit sets a problem
// body of its own).
func bareDeny(_ *Request, d *Denial) Response { return Response{Status: d.Status} }

// bareError is the Config.OnError of a protocol layer that sets none: the
// status alone, without the error's text.
func bareError(*Request, error) *Response { return &Response{Status: statusInternalError} }
