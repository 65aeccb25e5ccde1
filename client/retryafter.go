package client

import (
	"strings"
	"time"
)

// ParseRetryAfter parses a Retry-After field value (RFC 9110 §10.2.3) and
// returns how long to wait from now. Both forms are accepted:
//
//   - delay-seconds, 1*DIGIT ("120");
//   - an HTTP-date in any of the three formats of RFC 9110 §5.6.7:
//     IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), the obsolete RFC 850
//     form ("Sunday, 06-Nov-94 08:49:37 GMT") and asctime
//     ("Sun Nov  6 08:49:37 1994"). A date in the past means 0.
//
// Surrounding spaces and tabs are ignored; day and month names match
// case-insensitively. Anything else (signs, fractions, trailing text, an
// impossible date) is malformed and reported with ok == false, and so is
// an absurd wait of more than a year: no server means that,
// it is a unit error (an epoch time, or milliseconds, sent as seconds), and
// like any malformed value it is ignored rather than obeyed. A long but
// plausible wait is returned as is, for the caller to judge too long. It
// does not allocate.
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

// maxRetryAfter is the longest Retry-After believed.
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

// parseHTTPDate parses the three HTTP-date formats. now resolves the
// two-digit year of the RFC 850 form.
func parseHTTPDate(s string, now time.Time) (time.Time, bool) {
	switch {
	case len(s) == 29 && s[3] == ',':
		// IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
		if !isDayName(s[0:3]) || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
			s[16] != ' ' || s[25] != ' ' || s[26:] != "GMT" {
			return time.Time{}, false
		}
		day, ok1 := twoDigits(s[5:7])
		mon := monthIndex(s[8:11])
		year, ok2 := fourDigits(s[12:16])
		if !ok1 || !ok2 || mon == 0 {
			return time.Time{}, false
		}
		return makeDate(year, mon, day, s[17:25])
	case len(s) == 24 && s[3] == ' ':
		// asctime: "Sun Nov  6 08:49:37 1994" (day is "SP DIGIT" or 2DIGIT)
		if !isDayName(s[0:3]) || s[7] != ' ' || s[10] != ' ' || s[19] != ' ' {
			return time.Time{}, false
		}
		mon := monthIndex(s[4:7])
		day, ok1 := twoDigitsLenient(s[8:10])
		year, ok2 := fourDigits(s[20:24])
		if !ok1 || !ok2 || mon == 0 {
			return time.Time{}, false
		}
		return makeDate(year, mon, day, s[11:19])
	default:
		// RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
		comma := strings.IndexByte(s, ',')
		if comma < 0 || !isLongDayName(s[:comma]) {
			return time.Time{}, false
		}
		r := s[comma+1:]
		if len(r) != 23 || r[0] != ' ' || r[3] != '-' || r[7] != '-' ||
			r[10] != ' ' || r[19] != ' ' || r[20:] != "GMT" {
			return time.Time{}, false
		}
		day, ok1 := twoDigits(r[1:3])
		mon := monthIndex(r[4:7])
		yy, ok2 := twoDigits(r[8:10])
		if !ok1 || !ok2 || mon == 0 {
			return time.Time{}, false
		}
		// RFC 9110: a two-digit year that appears more than 50 years in the
		// future is the most recent past year with the same last two digits.
		year := now.UTC().Year()/100*100 + yy
		if year > now.UTC().Year()+50 {
			year -= 100
		}
		return makeDate(year, mon, day, r[11:19])
	}
}

// makeDate validates the calendar date and "HH:MM:SS" and builds the UTC time.
func makeDate(year, mon, day int, hms string) (time.Time, bool) {
	if hms[2] != ':' || hms[5] != ':' {
		return time.Time{}, false
	}
	hh, ok1 := twoDigits(hms[0:2])
	mm, ok2 := twoDigits(hms[3:5])
	ss, ok3 := twoDigits(hms[6:8])
	if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 59 || day < 1 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(mon), day, hh, mm, ss, 0, time.UTC)
	if t.Day() != day { // 31 Feb and friends normalize into another month
		return time.Time{}, false
	}
	return t, true
}

func twoDigits(s string) (int, bool) {
	if len(s) != 2 || !isDigit(s[0]) || !isDigit(s[1]) {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

// twoDigitsLenient accepts asctime's day: 2DIGIT or SP DIGIT.
func twoDigitsLenient(s string) (int, bool) {
	if len(s) == 2 && s[0] == ' ' && isDigit(s[1]) {
		return int(s[1] - '0'), true
	}
	return twoDigits(s)
}

func fourDigits(s string) (int, bool) {
	hi, ok1 := twoDigits(s[0:2])
	lo, ok2 := twoDigits(s[2:4])
	return hi*100 + lo, ok1 && ok2
}

const monthNames = "janfebmaraprmayjunjulaugsepoctnovdec"

// monthIndex returns 1..12 for a three-letter month name, 0 otherwise.
func monthIndex(s string) int {
	if len(s) != 3 {
		return 0
	}
	a, b, c := lower(s[0]), lower(s[1]), lower(s[2])
	for i := 0; i < len(monthNames); i += 3 {
		if monthNames[i] == a && monthNames[i+1] == b && monthNames[i+2] == c {
			return i/3 + 1
		}
	}
	return 0
}

var longDayNames = [...]string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

// isDayName reports whether s is a three-letter day name. The weekday is not
// checked against the date: like net/http, a wrong one is not worth failing.
func isDayName(s string) bool {
	for _, n := range longDayNames {
		if equalFold(s, n[:3]) {
			return true
		}
	}
	return false
}

func isLongDayName(s string) bool {
	for _, n := range longDayNames {
		if equalFold(s, n) {
			return true
		}
	}
	return false
}

// equalFold is ASCII case-insensitive equality; b must be lower case.
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != b[i] {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
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
