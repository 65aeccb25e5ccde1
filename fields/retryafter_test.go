package fields

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(1994, 11, 6, 8, 49, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"120", 120 * time.Second, true},
		{" \t7 ", 7 * time.Second, true},
		{"007", 7 * time.Second, true},
		// Up to a year is believed; more is absurd, and ignored.
		{"31536000", 365 * 24 * time.Hour, true},
		{"31536001", 0, false},
		{"1772366400", 0, false}, // an epoch time sent as a delay
		{"9223372037", 0, false}, // more than a Duration holds
		{"99999999999999999999999", 0, false},
		// The three HTTP-date formats, all 37s after now.
		{"Sun, 06 Nov 1994 08:49:37 GMT", 37 * time.Second, true},
		{"Sunday, 06-Nov-94 08:49:37 GMT", 37 * time.Second, true},
		{"Sun Nov  6 08:49:37 1994", 37 * time.Second, true},
		{"Sun Nov 06 08:49:37 1994", 37 * time.Second, true},
		// Names are matched case-insensitively; the weekday is not checked.
		{"sun, 06 NOV 1994 08:49:37 GMT", 37 * time.Second, true},
		{"Mon, 06 Nov 1994 08:49:37 GMT", 37 * time.Second, true},
		// In the past: no wait.
		{"Sun, 06 Nov 1994 08:00:00 GMT", 0, true},
		{"Thu, 01 Jan 1970 00:00:00 GMT", 0, true},
		{"Mon, 06 Nov 1995 08:49:00 GMT", 365 * 24 * time.Hour, true}, // a year ahead
		{"Mon, 06 Nov 1995 08:49:01 GMT", 0, false},                   // absurd
		{"Fri, 31 Dec 9999 23:59:59 GMT", 0, false},
		// Malformed.
		{"", 0, false},
		{"  ", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
		{"12 s", 0, false},
		{"soon", 0, false},
		{"Sun, 06 Nov 1994 08:49:37 UTC", 0, false},
		{"Sun, 06 Nov 1994 08:49:37 +0000", 0, false},
		{"Sun, 6 Nov 1994 08:49:37 GMT", 0, false},
		{"Sun, 06 Nov 94 08:49:37 GMT", 0, false},
		{"Sun, 06 Foo 1994 08:49:37 GMT", 0, false},
		{"Xyz, 06 Nov 1994 08:49:37 GMT", 0, false},
		{"Sun, 31 Nov 1994 08:49:37 GMT", 0, false},
		{"Sun, 29 Feb 1995 08:49:37 GMT", 0, false},
		{"Sun, 00 Nov 1994 08:49:37 GMT", 0, false},
		{"Sun, 06 Nov 1994 24:00:00 GMT", 0, false},
		{"Sun, 06 Nov 1994 08:60:00 GMT", 0, false},
		{"Sun, 06 Nov 1994 08:49:60 GMT", 0, false},
		{"Sun, 06 Nov 1994 08-49-37 GMT", 0, false},
		{"Sun, 06 Nov 1994 08:49:37 GMT ", 37 * time.Second, true}, // trailing OWS is trimmed
		{"Sun, 06 Nov 1994 08:49:37 GMTX", 0, false},
		{"Sunday, 06-Nov-1994 08:49:37 GMT", 0, false},
		{"Sonntag, 06-Nov-94 08:49:37 GMT", 0, false},
		{"Sun Nov  6 08:49:37 94", 0, false},
		{",", 0, false},
		// The RFC 850 form's zone must be GMT (RFC 9110 §5.6.7): net/http
		// would read any abbreviation, with the offset the machine's local
		// time zone gives it, or none.
		{"Sunday, 06-Nov-94 08:49:37 UTC", 0, false},
		{"Sunday, 06-Nov-94 08:49:37 PST", 0, false},
		{"Sunday, 06-Nov-94 08:49:37 CEST", 0, false},
		{"Sunday, 06-Nov-94 08:49:37 GMT+5", 0, false},
		{"Sunday, 06-Nov-94 08:49:37 GMT-11", 0, false},
		{"Sunday, 06-Nov-94 08:49:37 XGMT", 0, false},
		{"Sunday, 06-Nov-94 08:49:37 gmt", 0, false},
		{"Sunday, 06-Nov-94 08:49:37", 0, false},
		// net/http's leniencies, which RFC 9110 §5.6.7 allows ("be robust"):
		// a one-digit asctime day or hour, runs of spaces, a fraction after
		// the seconds. Each still names one unambiguous instant in GMT.
		{"Sun Nov 6 08:49:37 1994", 37 * time.Second, true},
		{"Sun, 06 Nov 1994 8:49:37 GMT", 37 * time.Second, true},
		{"Sun,  06 Nov 1994   08:49:37 GMT", 37 * time.Second, true},
		{"Sun, 06 Nov 1994 08:49:37.5 GMT", 37500 * time.Millisecond, true},
		{"Sunday, 06-Nov-94 08:49:37.25 GMT", 37250 * time.Millisecond, true},
		// Tabs are whitespace only around the value.
		{"Sun, 06 Nov 1994 08:49:37\tGMT", 0, false},
	} {
		got, ok := ParseRetryAfter(tc.in, now)
		assert.Equal(t, tc.ok, ok, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
}

func TestParseHTTPDateRFC850TwoDigitYear(t *testing.T) {
	// RFC 9110: a two-digit year more than 50 years ahead is in the past.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"Thursday, 01-Jan-70 00:00:10 GMT": time.Date(2070, 1, 1, 0, 0, 10, 0, time.UTC), // 44 years ahead
		"Sunday, 01-Jan-90 00:00:10 GMT":   time.Date(1990, 1, 1, 0, 0, 10, 0, time.UTC), // 2090 is too far
		"Thursday, 01-Jan-26 00:00:10 GMT": time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC),
		"Thursday, 29-Feb-96 00:00:00 GMT": time.Date(1996, 2, 29, 0, 0, 0, 0, time.UTC),
	} {
		got, ok := parseHTTPDate(in, now)
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	_, ok := parseHTTPDate("Friday, 29-Feb-97 00:00:00 GMT", now)
	assert.False(t, ok, "1997 is no leap year")

	d, ok := ParseRetryAfter("Thursday, 01-Jan-26 00:00:10 GMT", now)
	assert.True(t, ok)
	assert.Equal(t, 10*time.Second, d)
	_, ok = ParseRetryAfter("Thursday, 01-Jan-70 00:00:10 GMT", now)
	assert.False(t, ok, "44 years is an absurd wait")

	// In 2100, "00" is 2100 (time.Parse says 2000), which has no 29 Feb.
	in2100 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	got, ok := parseHTTPDate("Monday, 01-Mar-00 00:00:00 GMT", in2100)
	assert.True(t, ok)
	assert.Equal(t, time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC), got)
	_, ok = parseHTTPDate("Monday, 29-Feb-00 00:00:00 GMT", in2100)
	assert.False(t, ok, "2100 is no leap year")
}
