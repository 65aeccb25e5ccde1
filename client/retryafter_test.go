package client

import (
	"math"
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
		{"99999999999999999999999", time.Duration(math.MaxInt64), true}, // saturates
		{"9223372036", 9223372036 * time.Second, true},
		{"9223372037", time.Duration(math.MaxInt64), true},
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
		{"Wed, 29 Feb 1996 00:00:00 GMT", time.Date(1996, 2, 29, 0, 0, 0, 0, time.UTC).Sub(now), true},
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
		{"Sun Nov 6 08:49:37 1994", 0, false},
		{",", 0, false},
	} {
		got, ok := ParseRetryAfter(tc.in, now)
		assert.Equal(t, tc.ok, ok, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
}

func TestParseRetryAfterRFC850TwoDigitYear(t *testing.T) {
	// RFC 9110: a two-digit year more than 50 years ahead is in the past.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d, ok := ParseRetryAfter("Thursday, 01-Jan-70 00:00:10 GMT", now) // 2070 is 44 years ahead
	assert.True(t, ok)
	assert.Equal(t, time.Date(2070, 1, 1, 0, 0, 10, 0, time.UTC).Sub(now), d)
	d, ok = ParseRetryAfter("Sunday, 01-Jan-90 00:00:10 GMT", now) // 2090 is too far: 1990
	assert.True(t, ok)
	assert.Zero(t, d)
	d, ok = ParseRetryAfter("Thursday, 01-Jan-26 00:00:10 GMT", now)
	assert.True(t, ok)
	assert.Equal(t, 10*time.Second, d)
}
