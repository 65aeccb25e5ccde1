package httplimit

import (
	"net/http"
	"strconv"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// problemContentType is the media type of the default response bodies.
const problemContentType = "application/problem+json"

// quotaExceededType is the RFC 9457 problem type of a 429 answer.
const quotaExceededType = "https://iana.org/assignments/http-problem-types#quota-exceeded"

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

// Violated returns the names of the policies that refused the request, in
// rule order; none for a 503.
func (d *Denial) Violated() []string {
	var names []string
	for i, q := range d.r.reqs {
		if d.violated(i) {
			names = append(names, q.Policy.Name())
		}
	}
	return names
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
	case d.Status != http.StatusTooManyRequests:
		return false
	case !d.r.decided: // a reservation reports only its decisive policy
		return d.r.reqs[i].Policy == d.Decision.Policy
	default:
		return !d.r.ds[i].Allowed
	}
}

// problemDeny is the default Config.Deny: an RFC 9457 problem body. A 503
// has the type about:blank, which says the status says it all: no problem
// type is registered for an overloaded service, or for an unavailable rate
// limiter, and the client needs none to know that it should come back after
// Retry-After.
func problemDeny(r *Request, d *Denial) Response {
	if d.Dependency != "" {
		return dependencyProblem(r, d)
	}
	b := r.buf[:0]
	if d.Shed != nil {
		b = append(b, `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"The service is overloaded; retry after `...)
		b = appendSeconds(b, d.RetryAfter)
		b = append(b, `."}`...)
		r.buf = b
		return Response{Status: d.Status, ContentType: problemContentType, Body: b}
	}
	if d.Status == http.StatusServiceUnavailable {
		b = append(b, `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"Rate limiting is temporarily unavailable; retry after `...)
		b = appendSeconds(b, d.RetryAfter)
		b = append(b, `."}`...)
		r.buf = b
		return Response{Status: d.Status, ContentType: problemContentType, Body: b}
	}
	// Policy names are printable ASCII without quotes or backslashes
	// (core.NewPolicy checks), so they need no escaping in JSON.
	b = append(b, `{"type":"`+quotaExceededType+`","title":"Too Many Requests","status":429,"detail":"`...)
	if d.Decision.Impossible {
		b = append(b, "The request costs "...)
		b = appendInt(b, d.Cost())
		b = append(b, " units, more than policy "...)
		b = append(b, d.Decision.Policy.Name()...)
		b = append(b, " ever grants at once ("...)
		b = appendInt(b, d.Decision.Limit)
		b = append(b, "); retrying will not help."...)
	} else {
		b = append(b, "Rate limit exceeded; retry after "...)
		b = appendSeconds(b, d.RetryAfter)
		b = append(b, '.')
	}
	b = append(b, `","violated-policies":[`...)
	first := true
	for i, q := range r.reqs {
		if !d.violated(i) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, q.Policy.Name()...)
		b = append(b, '"')
	}
	b = append(b, "]}"...)
	r.buf = b
	return Response{Status: d.Status, ContentType: problemContentType, Body: b}
}

// internalError is the default Config.OnError: 500, without the error's text.
func internalError(*Request, error) *Response {
	return &Response{
		Status:      http.StatusInternalServerError,
		ContentType: problemContentType,
		Body:        []byte(`{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"The request could not be checked against its rate limits."}`),
	}
}

func appendSeconds(b []byte, n int64) []byte {
	b = appendInt(b, n)
	if n == 1 {
		return append(b, " second"...)
	}
	return append(b, " seconds"...)
}

func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }
