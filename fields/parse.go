package fields

import (
	"net/http"
	"time"
)

// Status is where a client stands in one of a server's rate limits, as
// the server reported it: how many units are left and when more become
// available.
type Status struct {
	// Policy is the policy name from the IETF RateLimit field; empty for the
	// older forms, which have no names.
	Policy string
	// Limit is the policy's quota per window, 0 when the server did not say.
	Limit int64
	// Remaining is the number of units left.
	Remaining int64
	// Reset is the time until more quota is available (the draft's "t").
	Reset time.Duration
	// Window is the policy's window, 0 when unknown.
	Window time.Duration
	// Concurrent is set for a quota of concurrent requests (RateLimit-Policy
	// qu="concurrent-requests"): Limit is the most requests the server
	// serves at once, Remaining the slots free, and there is no window.
	Concurrent bool
}

// MaxReset is the longest reset time believed. Larger values are treated
// as absurd and the quota ignored, as the IETF draft advises for malformed
// values.
const MaxReset = 24 * time.Hour

// MaxItems is the most statuses [Append] reports for one response: a
// buffer of MaxItems never grows. Further RateLimit items are validated
// but ignored, so that a hostile field cannot make policy matching
// quadratic.
const MaxItems = 16

// epochThreshold tells epoch seconds from delta seconds in reset fields: a
// value of 10^9 or more (2001-09-09 as a date, 31 years as a delay) can only
// be a Unix time.
const epochThreshold = 1_000_000_000

// Lines are the rate-limit fields of one response as field lines, each
// field's lines in the order received; a field absent is nil. They let a
// caller whose fields are not an [http.Header] (gRPC metadata, whose keys
// are lower-case) parse them as [Append] does.
type Lines struct {
	RateLimit, Policy          []string // RateLimit, RateLimit-Policy
	Limit, Remaining, Reset    []string // RateLimit-Limit, -Remaining, -Reset
	XLimit, XRemaining, XReset []string // X-RateLimit-Limit, -Remaining, -Reset
}

// Parse reads the rate-limit fields of a response's header. See [Append]
// for the forms understood. It returns nil when none is present and valid.
func Parse(h http.Header, now time.Time) []Status {
	return Append(nil, h, now)
}

// Append appends the quotas reported by h to dst and returns the extended
// slice. It does not allocate when dst has room (and policy names have no
// escapes, and each field comes in one field line). The first form present
// and valid wins, newest first:
//
//  1. IETF draft-ietf-httpapi-ratelimit-headers (-08 and later):
//     RateLimit: "per-ip";r=42;t=17 with RateLimit-Policy:
//     "per-ip";q=100;w=60, both RFC 9651 Lists. One Status per RateLimit
//     item; Limit and Window come from the policy of the same name. An
//     item without an Integer r >= 0 and t >= 0 is ignored; a field that
//     is not a valid structured field is ignored entirely (RFC 9651 §4.2).
//  2. The older single-field dictionary: RateLimit: limit=100, remaining=42,
//     reset=17.
//  3. The older separate fields RateLimit-Limit, RateLimit-Remaining and
//     RateLimit-Reset.
//  4. The legacy X-RateLimit-Limit, X-RateLimit-Remaining and
//     X-RateLimit-Reset.
//
// In forms 3 and 4 a reset of 10^9 or more is a Unix time in seconds (10^9 s
// is 31 years as a delay, but 2001 as a date); anything smaller is a delay
// in seconds. A reset time in the past means 0. Negative or non-integer
// numbers, and resets beyond [MaxReset], are ignored.
func Append(dst []Status, h http.Header, now time.Time) []Status {
	// The header is looked up field by field, as the forms are tried: most
	// responses stop at the first.
	n := len(dst)
	if v := h["Ratelimit"]; len(v) > 0 {
		if dst = appendRateLimit(dst, v, h["Ratelimit-Policy"]); len(dst) > n {
			return dst
		}
	}
	if q, ok := parseTriple(h["Ratelimit-Limit"], h["Ratelimit-Remaining"], h["Ratelimit-Reset"], now); ok {
		return append(dst, q)
	}
	if q, ok := parseTriple(h["X-Ratelimit-Limit"], h["X-Ratelimit-Remaining"], h["X-Ratelimit-Reset"], now); ok {
		return append(dst, q)
	}
	return dst
}

// AppendLines is [Append] for fields given as [Lines].
func AppendLines(dst []Status, l Lines, now time.Time) []Status {
	n := len(dst)
	if dst = appendRateLimit(dst, l.RateLimit, l.Policy); len(dst) > n {
		return dst
	}
	if q, ok := parseTriple(l.Limit, l.Remaining, l.Reset, now); ok {
		return append(dst, q)
	}
	if q, ok := parseTriple(l.XLimit, l.XRemaining, l.XReset, now); ok {
		return append(dst, q)
	}
	return dst
}

// appendRateLimit handles forms 1 and 2, the two readings of RateLimit.
func appendRateLimit(dst []Status, lines, policyLines []string) []Status {
	if len(lines) == 0 {
		return dst
	}
	n := len(dst)
	if dst = appendIETF(dst, lines, policyLines); len(dst) > n {
		return dst
	}
	if q, ok := parseDict(lines); ok {
		return append(dst, q)
	}
	return dst
}

// appendIETF handles form 1 in one pass per field. Several field lines are
// one list (RFC 9110 §5.3, RFC 9651 §4.2); any syntax error invalidates the
// field.
func appendIETF(dst []Status, lines, policyLines []string) []Status {
	var pbuf [MaxItems]policyItem
	policies, policiesOK := readPolicies(pbuf[:0], policyLines)
	n, items := len(dst), 0
	it := newSFFieldIter(lines, false)
	for m, ok := it.next(); ok; m, ok = it.next() {
		if items++; items > MaxItems || (m.item.kind != sfString && m.item.kind != sfToken) {
			continue // keep validating the rest
		}
		r, t, okR, okT := m.params2("r", "t")
		if !okR || !okT || r < 0 || t < 0 || t > int64(MaxReset/time.Second) {
			continue
		}
		q := Status{Remaining: r, Reset: time.Duration(t) * time.Second}
		if m.item.kind == sfString {
			q.Policy = unescapeSF(m.item.raw)
		} else {
			q.Policy = m.item.raw
		}
		if policiesOK {
			for _, p := range policies {
				if p.kind == m.item.kind && p.raw == m.item.raw {
					q.Limit, q.Window, q.Concurrent = p.limit, p.window, p.concurrent
					break
				}
			}
		}
		dst = append(dst, q)
	}
	if it.bad {
		return dst[:n]
	}
	return dst
}

// concurrentRequests is the RateLimit draft's quota unit of a concurrency
// limit.
const concurrentRequests = "concurrent-requests"

// maxWindowSeconds bounds a believable policy window: a year. A longer one
// is absurd and reported as unknown.
const maxWindowSeconds = 365 * 24 * 3600

// policyItem is a RateLimit-Policy item: its name, as raw as in the field
// (sf-string escaping is canonical, so equal raw content means equal names),
// and its quota q and window w (0 when absent or invalid).
type policyItem struct {
	kind       sfKind
	raw        string
	limit      int64
	window     time.Duration
	concurrent bool // qu="concurrent-requests"
}

// readPolicies reads RateLimit-Policy. ok is false when the field is
// malformed: the quotas are still used, without limits and windows.
func readPolicies(dst []policyItem, lines []string) ([]policyItem, bool) {
	it := newSFFieldIter(lines, false)
	for m, ok := it.next(); ok; m, ok = it.next() {
		if len(dst) == cap(dst) || (m.item.kind != sfString && m.item.kind != sfToken) {
			continue
		}
		p := policyItem{kind: m.item.kind, raw: m.item.raw}
		if qu, ok := m.text("qu"); ok {
			p.concurrent = qu == concurrentRequests
		}
		q, w, okQ, okW := m.params2("q", "w")
		if okQ && q >= 0 {
			p.limit = q
			if okW && w > 0 && w <= maxWindowSeconds {
				p.window = time.Duration(w) * time.Second
			}
		}
		dst = append(dst, p)
	}
	if it.bad {
		return dst[:0], false
	}
	return dst, true
}

// parseDict handles form 2: an RFC 9651 Dictionary with Integer
// members limit (optional), remaining and reset.
func parseDict(lines []string) (Status, bool) {
	var q Status
	var reset int64 // seconds, range-checked before it becomes a Duration
	var haveRem, haveReset bool
	it := newSFFieldIter(lines, true)
	for m, ok := it.next(); ok; m, ok = it.next() {
		if m.item.kind != sfInteger {
			continue
		}
		switch m.key { // later duplicates win
		case "limit":
			q.Limit = m.item.num
		case "remaining":
			q.Remaining, haveRem = m.item.num, true
		case "reset":
			reset, haveReset = m.item.num, true
		}
	}
	if it.bad {
		return Status{}, false
	}
	if !haveRem || !haveReset || q.Limit < 0 || q.Remaining < 0 || reset < 0 || reset > int64(MaxReset/time.Second) {
		return Status{}, false
	}
	q.Reset = time.Duration(reset) * time.Second
	return q, true
}

// parseTriple handles forms 3 and 4. Remaining and Reset are
// required; Limit is optional.
func parseTriple(limit, remaining, reset []string, now time.Time) (Status, bool) {
	if len(remaining) == 0 || len(reset) == 0 {
		return Status{}, false
	}
	rem, ok1 := parseLeadingInt(remaining[0])
	rst, ok2 := parseLeadingInt(reset[0])
	if !ok1 || !ok2 {
		return Status{}, false
	}
	q := Status{Remaining: rem}
	if len(limit) > 0 {
		if l, ok := parseLeadingInt(limit[0]); ok {
			q.Limit = l
		}
	}
	if rst >= epochThreshold {
		rst -= now.Unix()
		if rst < 0 {
			if rst < -int64(MaxReset/time.Second) {
				return Status{}, false // a reset a day in the past: a broken clock
			}
			rst = 0
		}
	}
	if rst > int64(MaxReset/time.Second) {
		return Status{}, false
	}
	q.Reset = time.Duration(rst) * time.Second
	return q, true
}

// parseLeadingInt reads a non-negative integer field value. Early drafts
// appended policies after the number ("100, 100;w=60"), so a ',' or ';'
// may follow; anything else (a sign, a fraction, letters) is malformed.
func parseLeadingInt(v string) (int64, bool) {
	v = trimOWS(v)
	var n int64
	i := 0
	for ; i < len(v) && isDigit(v[i]); i++ {
		if i >= 15 {
			return 0, false
		}
		n = n*10 + int64(v[i]-'0')
	}
	if i == 0 {
		return 0, false
	}
	if rest := trimLeftOWS(v[i:]); rest != "" && rest[0] != ',' && rest[0] != ';' {
		return 0, false
	}
	return n, true
}
