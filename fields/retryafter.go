package fields

import (
	"net/http"
	"strings"
	"time"
)

// ParseRetryAfter parses a Retry-After field value (RFC 9110 §10.2.3),
// delay-seconds or an HTTP-date in any of its three formats (read as
// [http.ParseTime] does, an RFC 850 date only in GMT), and returns how long
// to wait from now; a date in the past means 0. Surrounding spaces and tabs
// are ignored; anything else malformed, or a wait of more than a year (a
// unit error), reports ok == false.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = trimOWS(v)
	if v == "" {
		return 0, false
	}
	if isDigit(v[0]) {
		return parseDelaySeconds(v)
	}
	t, ok := parseHTTPDate(v, now)
	if !ok {
		return 0, false
	}
	d = max(t.Sub(now), 0)
	if d > maxRetryAfter {
		return 0, false
	}
	return d, true
}

// maxRetryAfter is the longest Retry-After believed. A longer one is no
// server's intent but a unit error (an epoch time, or milliseconds, sent as
// seconds), ignored like any malformed value.
const maxRetryAfter = 365 * 24 * time.Hour

// maxDelaySeconds is maxRetryAfter in seconds.
const maxDelaySeconds = int64(maxRetryAfter / time.Second)

func parseDelaySeconds(v string) (time.Duration, bool) {
	var n int64
	for i := 0; i < len(v); i++ {
		if !isDigit(v[i]) {
			return 0, false
		}
		if n <= maxDelaySeconds { // past it, only check the other digits
			n = n*10 + int64(v[i]-'0')
		}
	}
	if n > maxDelaySeconds {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// parseHTTPDate parses an HTTP-date with [http.ParseTime], then applies
// RFC 9110's rules for the RFC 850 form that net/http does not: now
// resolves its two-digit year.
func parseHTTPDate(s string, now time.Time) (time.Time, bool) {
	t, err := http.ParseTime(s)
	if err != nil {
		return time.Time{}, false
	}
	// Every accepted value starts with a day name. IMF-fixdate and asctime
	// use its three-letter form, followed by ',' or ' '; the RFC 850 form
	// spells it out.
	if !isAlpha(s[3]) {
		return t, true
	}
	// time.RFC850 ends in the zone "MST", which parses any abbreviation
	// (PST, CEST, GMT+5), with the local time zone's offset for it or none.
	if !strings.HasSuffix(s, " GMT") {
		return time.Time{}, false
	}
	// The wall clock is the one written, in GMT; only the year changes.
	year := rfc850Year(t.Year()%100, now)
	u := time.Date(year, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	if u.Day() != t.Day() { // 29 Feb moved to a year that is not leap
		return time.Time{}, false
	}
	return u, true
}

// rfc850Year resolves a two-digit year as RFC 9110 §5.6.7 requires: a year
// that appears to be more than 50 years in the future is the most recent
// past year with the same last two digits. (time.Parse would read 00-68 as
// 20xx and 69-99 as 19xx, whatever the date.)
func rfc850Year(yy int, now time.Time) int {
	cur := now.UTC().Year()
	year := cur - cur%100 + yy
	if year > cur+50 {
		year -= 100
	}
	return year
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// trimOWS strips optional whitespace (SP / HTAB) from both ends.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
