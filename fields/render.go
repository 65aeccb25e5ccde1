package fields

import (
	"strconv"
	"time"
)

// The renderers append to a caller's buffer and never allocate when it has
// room: a server calls them for every response. They do not check their
// arguments, which the server's configuration has (core.PolicyConfig
// allows only printable ASCII names).

// AppendItem appends the RateLimit list member "name";r=remaining;t=reset
// to b: remaining units left under the policy name, and reset seconds
// until more become available.
func AppendItem(b []byte, name string, remaining, reset int64) []byte {
	b = appendString(b, name)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, remaining, 10)
	b = append(b, ";t="...)
	return strconv.AppendInt(b, reset, 10)
}

// AppendPolicy appends the RateLimit-Policy list member
// "name";q=quota;w=window to b: the policy grants quota units at once and
// renews them over window seconds.
func AppendPolicy(b []byte, name string, quota, window int64) []byte {
	b = appendString(b, name)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, quota, 10)
	b = append(b, ";w="...)
	return strconv.AppendInt(b, window, 10)
}

// AppendConcurrentPolicy appends the RateLimit-Policy list member
// "name";q=limit;qu="concurrent-requests" to b: a quota of limit requests in
// flight at once. Its RateLimit member is AppendItem(b, name, free, 0), as a
// slot comes back as soon as a request ends.
func AppendConcurrentPolicy(b []byte, name string, limit int64) []byte {
	b = appendString(b, name)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, limit, 10)
	return append(b, `;qu="`+concurrentRequests+`"`...)
}

// AppendSep appends the separator between two list members, ", ", to b:
// a member added to a field that already has some goes after it.
func AppendSep(b []byte) []byte { return append(b, ", "...) }

// Seconds returns d in whole seconds, rounded up, 0 if d <= 0: the reset
// and Retry-After a server sends, never early.
func Seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++ // not d+time.Second-1, which overflows near the longest Duration
	}
	return s
}

// Epoch returns t in Unix seconds, rounded up: the X-RateLimit-Reset a
// server sends, never early.
func Epoch(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// appendString appends s as an sf-string (RFC 9651 §4.1.6): quoted, with
// '"' and '\' escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' {
			b = append(b, s[start:i]...)
			b = append(b, '\\')
			start = i // the character itself starts the next run
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
