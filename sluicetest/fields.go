package sluicetest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/fields"
)

// Fields are a response's rate-limit fields, parsed strictly by package
// fields as the structured fields of draft-ietf-httpapi-ratelimit-headers
// (RFC 9651 lists): every middleware on a request's path adds its members
// to the lists.
type Fields struct {
	// Policies are RateLimit-Policy's members, in order.
	Policies []fields.Policy
	// Limits are RateLimit's members, in order.
	Limits []fields.Item
	// RetryAfter is Retry-After in seconds, -1 if the response has none.
	RetryAfter int64
}

// Limit returns the RateLimit member of the policy name.
func (f Fields) Limit(name string) (fields.Item, bool) {
	for _, l := range f.Limits {
		if l.Name == name {
			return l, true
		}
	}
	return fields.Item{}, false
}

// ParseFields parses the rate-limit fields of h, a response's header
// (httptest.ResponseRecorder.Result().Header, or a client's
// http.Response.Header). Absent fields parse as empty; a malformed one is
// an error naming it. Retry-After must be a count of seconds, as sluice
// sends it: a date would make the assertion depend on the wall clock.
func ParseFields(h http.Header) (Fields, error) {
	f := Fields{RetryAfter: -1}
	var err error
	if f.Policies, err = fields.ParsePolicies(h.Values("RateLimit-Policy")); err != nil {
		return Fields{}, fmt.Errorf("sluicetest: %q: %w", h.Values("RateLimit-Policy"), err)
	}
	if f.Limits, err = fields.ParseItems(h.Values("RateLimit")); err != nil {
		return Fields{}, fmt.Errorf("sluicetest: %q: %w", h.Values("RateLimit"), err)
	}
	if v := h.Values("Retry-After"); len(v) > 0 {
		d, ok := fields.ParseRetryAfter(v[0], time.Time{})
		if !ok || len(v) > 1 || strings.Trim(v[0], "0123456789") != "" {
			return Fields{}, fmt.Errorf("sluicetest: Retry-After %q: want one count of seconds", v)
		}
		f.RetryAfter = int64(d / time.Second)
	}
	return f, nil
}

// AssertRemaining checks that rec's RateLimit field reports remaining units
// left under the policy name, and reports whether it does. A test that
// checks a limit from the client's side reads the figure a client reads.
func AssertRemaining(t testing.TB, rec *httptest.ResponseRecorder, name string, remaining int64) bool {
	t.Helper()
	f, ok := parse(t, rec)
	if !ok {
		return false
	}
	l, found := f.Limit(name)
	switch {
	case !found:
		t.Errorf("sluicetest: RateLimit %q has no member for policy %q", rec.Result().Header.Values("RateLimit"), name)
		return false
	case l.Remaining != remaining:
		t.Errorf("sluicetest: policy %q: %d remaining, want %d (RateLimit %q)", name, l.Remaining, remaining, rec.Result().Header.Values("RateLimit"))
		return false
	}
	return true
}

// AssertRetryAfter checks that rec is a denial (429 Too Many Requests, or
// 503 Service Unavailable) whose Retry-After is seconds, and reports
// whether it is.
func AssertRetryAfter(t testing.TB, rec *httptest.ResponseRecorder, seconds int64) bool {
	t.Helper()
	f, ok := parse(t, rec)
	if !ok {
		return false
	}
	switch {
	case rec.Code != http.StatusTooManyRequests && rec.Code != http.StatusServiceUnavailable:
		t.Errorf("sluicetest: status %d, want a denial (429 or 503) with Retry-After %d", rec.Code, seconds)
		return false
	case f.RetryAfter != seconds:
		t.Errorf("sluicetest: Retry-After %d (-1: none), want %d", f.RetryAfter, seconds)
		return false
	}
	return true
}

func parse(t testing.TB, rec *httptest.ResponseRecorder) (Fields, bool) {
	t.Helper()
	f, err := ParseFields(rec.Result().Header)
	if err != nil {
		t.Error(err)
		return Fields{}, false
	}
	return f, true
}
