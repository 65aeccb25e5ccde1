package httplimit

import (
	"net/http"
	"strconv"

	"github.com/sluice-go/sluice/adapters/admit"
)

// The RFC 9457 problem types of the default answers, and their media type.
const (
	problemContentType = "application/problem+json"
	// quotaExceededType is a 429's type.
	quotaExceededType = "https://iana.org/assignments/http-problem-types#quota-exceeded"
	// temporaryReducedCapacityType is a 503's for a request shed because a
	// dependency has less capacity than it needs
	// (draft-ietf-httpapi-ratelimit-headers).
	temporaryReducedCapacityType = "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"
)

// problemDeny is the default Config.Deny: an RFC 9457 problem body, built in
// the request's buffer. A 503 has the type about:blank, which says the
// status says it all: no problem type is registered for an overloaded
// service, or for an unavailable rate limiter, and the client needs none to
// know that it should come back after Retry-After.
func problemDeny(r *admit.Request, d *admit.Denial) admit.Response {
	b := r.Buffer()
	switch {
	case d.Dependency != "":
		b = append(b, `{"type":"`+temporaryReducedCapacityType+`","title":"Service Unavailable","status":503,"detail":"A dependency of this service, `...)
		b = append(b, d.Dependency...)
		b = append(b, `, has reduced capacity; retry after `...)
		b = appendSeconds(b, d.RetryAfter)
		b = append(b, `.","dependency":"`...)
		b = append(b, d.Dependency...)
		b = append(b, `"}`...)
	case d.Shed != nil:
		b = append(b, `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"The service is overloaded; retry after `...)
		b = appendSeconds(b, d.RetryAfter)
		b = append(b, `."}`...)
	case d.Status == http.StatusServiceUnavailable:
		b = append(b, `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"Rate limiting is temporarily unavailable; retry after `...)
		b = appendSeconds(b, d.RetryAfter)
		b = append(b, `."}`...)
	default:
		b = appendQuotaExceeded(b, d)
	}
	return admit.Response{Status: d.Status, ContentType: problemContentType, Body: b}
}

// appendQuotaExceeded appends a 429's problem body. Policy names are
// printable ASCII without quotes or backslashes (core.NewPolicy checks), so
// they need no escaping in JSON.
func appendQuotaExceeded(b []byte, d *admit.Denial) []byte {
	b = append(b, `{"type":"`+quotaExceededType+`","title":"Too Many Requests","status":429,"detail":"`...)
	if d.Decision.Impossible {
		b = append(b, "The request costs "...)
		b = strconv.AppendInt(b, d.Cost(), 10)
		b = append(b, " units, more than policy "...)
		b = append(b, d.Decision.Policy.Name()...)
		b = append(b, " ever grants at once ("...)
		b = strconv.AppendInt(b, d.Decision.Limit, 10)
		b = append(b, "); retrying will not help."...)
	} else {
		b = append(b, "Rate limit exceeded; retry after "...)
		b = appendSeconds(b, d.RetryAfter)
		b = append(b, '.')
	}
	b = append(b, `","violated-policies":[`...)
	first := true
	for name := range d.Violated() {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"')
	}
	return append(b, "]}"...)
}

// internalError is the default Config.OnError: 500, without the error's text.
func internalError(*admit.Request, error) *admit.Response {
	return &admit.Response{
		Status:      http.StatusInternalServerError,
		ContentType: problemContentType,
		Body:        []byte(`{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"The request could not be checked against its rate limits."}`),
	}
}

func appendSeconds(b []byte, n int64) []byte {
	b = strconv.AppendInt(b, n, 10)
	if n == 1 {
		return append(b, " second"...)
	}
	return append(b, " seconds"...)
}
