// Package fields reads and writes the rate-limit fields of a response:
// RateLimit and RateLimit-Policy (draft-ietf-httpapi-ratelimit-headers,
// RFC 9651 structured-field lists), the older RateLimit-Limit, -Remaining
// and -Reset, X-RateLimit-*, and Retry-After.
//
// A client reads where it stands with [Parse] or [Append], from an
// [http.Header], or with [AppendLines] from the field lines of any other
// carrier (gRPC metadata):
//
//	for _, s := range fields.Parse(resp.Header, time.Now()) {
//		fmt.Println(s.Policy, s.Remaining, s.Reset)
//	}
//
// Malformed values are ignored, never trusted, as RFC 9651 and the draft
// ask. Tests that check what a server sends use the strict [ParseItems] and
// [ParsePolicies], which report any departure as an error.
//
// A server renders the fields with [AppendItem], [AppendPolicy],
// [AppendConcurrentPolicy] and [AppendSep], its times with [Seconds] and
// [Epoch]; these append to a caller's buffer and do not allocate. Names
// must be printable ASCII, and counts non-negative Integers of at most 15
// digits, as RFC 9651 allows.
//
// The package imports only the standard library.
package fields
