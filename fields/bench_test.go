package fields

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// Run: go test -run '^$' -bench . -benchmem ./fields

func BenchmarkParseRetryAfter(b *testing.B) {
	now := time.Date(1994, 11, 6, 8, 49, 0, 0, time.UTC)
	for _, bc := range []struct {
		name, v string
		ok      bool
	}{
		{"seconds", "120", true},
		{"imf-fixdate", "Sun, 06 Nov 1994 08:49:37 GMT", true},
		{"rfc850", "Sunday, 06-Nov-94 08:49:37 GMT", true},
		{"asctime", "Sun Nov  6 08:49:37 1994", true},
		// http.ParseTime tries every format, each failure building an error.
		{"malformed", "Sun, 06 Nov 1994 08:49:37 UTC", false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := ParseRetryAfter(bc.v, now); ok != bc.ok {
					b.Fatalf("ok = %v", ok)
				}
			}
		})
	}
}

func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name string
		h    http.Header
	}{
		{"ietf", hdr("RateLimit-Policy", `"per-ip";q=100;w=60, "login";q=5;w=300`, "RateLimit", `"per-ip";r=42;t=17, "login";r=1;t=250`)},
		{"dictionary", hdr("RateLimit", "limit=100, remaining=42, reset=17")},
		{"triple", hdr("RateLimit-Limit", "100", "RateLimit-Remaining", "42", "RateLimit-Reset", "17")},
		{"x-epoch", hdr("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", strconv.FormatInt(epoch.Unix()+60, 10))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var buf [MaxItems]Status
			b.ReportAllocs()
			for b.Loop() {
				if qs := Append(buf[:0], bc.h, epoch); len(qs) == 0 {
					b.Fatal("no quota")
				}
			}
		})
	}
}

// BenchmarkRender renders a response's RateLimit and RateLimit-Policy
// values as a server does: a rule's member after an earlier middleware's,
// and a concurrency quota.
func BenchmarkRender(b *testing.B) {
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendItem(AppendSep(append(buf[:0], `"per-ip";r=9;t=1`...)), "per-user", 99, Seconds(1500*time.Millisecond))
		buf = AppendConcurrentPolicy(AppendSep(AppendPolicy(buf, "per-user", 100, 60)), "concurrency", 64)
	}
}
