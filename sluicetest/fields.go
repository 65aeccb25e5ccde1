package sluicetest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/dunglas/httpsfv"
)

// Fields are a response's rate-limit fields, parsed as the structured
// fields of draft-ietf-httpapi-ratelimit-headers (RFC 9651 lists), the
// way a client reads them: every middleware on a request's path adds its
// members to the lists.
type Fields struct {
	// Policies are RateLimit-Policy's members, in order.
	Policies []PolicyItem
	// Limits are RateLimit's members, in order.
	Limits []LimitItem
	// RetryAfter is Retry-After in seconds, -1 if the response has none.
	RetryAfter int64
}

// PolicyItem is a member of RateLimit-Policy: "name";q=Q;w=W.
type PolicyItem struct {
	Name   string
	Quota  int64 // q: the units the policy grants at once
	Window int64 // w: its window, in seconds
}

// LimitItem is a member of RateLimit: "name";r=R;t=T.
type LimitItem struct {
	Name      string
	Remaining int64 // r: the units left
	Reset     int64 // t: seconds until more quota (when denied: Retry-After)
}

// Limit returns the RateLimit member of the policy name.
func (f Fields) Limit(name string) (LimitItem, bool) {
	for _, l := range f.Limits {
		if l.Name == name {
			return l, true
		}
	}
	return LimitItem{}, false
}

// ParseFields parses the rate-limit fields of h, a response's header
// (httptest.ResponseRecorder.Result().Header, or a client's
// http.Response.Header). Absent fields parse as empty; a malformed one is
// an error naming it.
func ParseFields(h http.Header) (Fields, error) {
	f := Fields{RetryAfter: -1}
	var err error
	if f.Policies, err = parseList(h, "RateLimit-Policy", "q", "w", func(name string, a, b int64) PolicyItem {
		return PolicyItem{Name: name, Quota: a, Window: b}
	}); err != nil {
		return Fields{}, err
	}
	if f.Limits, err = parseList(h, "RateLimit", "r", "t", func(name string, a, b int64) LimitItem {
		return LimitItem{Name: name, Remaining: a, Reset: b}
	}); err != nil {
		return Fields{}, err
	}
	if v := h.Values("Retry-After"); len(v) > 0 {
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil || len(v) > 1 || n < 0 {
			return Fields{}, fmt.Errorf("sluicetest: Retry-After %q: want one count of seconds", v)
		}
		f.RetryAfter = n
	}
	return f, nil
}

// parseList parses the list field name, whose members are strings with the
// integer parameters a and b, into items made by item.
func parseList[T any](h http.Header, name, a, b string, item func(string, int64, int64) T) ([]T, error) {
	v := h.Values(name)
	if len(v) == 0 {
		return nil, nil
	}
	list, err := httpsfv.UnmarshalList(v)
	if err != nil {
		return nil, fmt.Errorf("sluicetest: %s %q: %w", name, v, err)
	}
	items := make([]T, 0, len(list))
	for _, m := range list {
		it, ok := m.(httpsfv.Item)
		s, isString := it.Value.(string)
		if !ok || !isString {
			return nil, fmt.Errorf("sluicetest: %s %q: a member is not a string naming a policy", name, v)
		}
		av, aok := it.Params.Get(a)
		bv, bok := it.Params.Get(b)
		an, aInt := av.(int64)
		bn, bInt := bv.(int64)
		if !aok || !bok || !aInt || !bInt {
			return nil, fmt.Errorf("sluicetest: %s %q: member %q lacks integer %s and %s", name, v, s, a, b)
		}
		items = append(items, item(s, an, bn))
	}
	return items, nil
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
