package client

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// Run: go test -run '^$' -bench . -benchmem ./client

func BenchmarkTransportOverhead(b *testing.B) {
	// A canned in-memory answer isolates the layers' own cost. Its policy
	// (10^12 a second) never binds: the pacer reads and counts it, and
	// never waits.
	header := http.Header{
		"Ratelimit-Policy": {`"per-ip";q=1000000000000;w=1`},
		"Ratelimit":        {`"per-ip";r=999999999999;t=1`},
	}
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: header, Body: http.NoBody, Request: r}, nil
	})
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/v1/items", nil)
	for _, bc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", base},
		{"retry", newTransport(b, base, WithoutBreaker(), WithoutPacing())},
		{"retry+breaker", newTransport(b, base, WithoutPacing())},
		{"full", newTransport(b, base)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := bc.rt.RoundTrip(req)
				if err != nil || resp.StatusCode != 200 {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkTransportLoopback(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Policy", `"per-ip";q=1000000000000;w=1`) // never binds
		w.Header().Set("RateLimit", `"per-ip";r=999999999999;t=1`)
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	for _, name := range []string{"bare", "full"} {
		b.Run(name, func(b *testing.B) {
			base := &http.Transport{MaxIdleConnsPerHost: 4}
			defer base.CloseIdleConnections()
			var rt http.RoundTripper = base
			if name == "full" {
				rt = newTransport(b, base)
			}
			c := &http.Client{Transport: rt}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

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

func BenchmarkParseRateLimit(b *testing.B) {
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
			var buf [maxQuotaItems]RateLimitStatus
			b.ReportAllocs()
			for b.Loop() {
				if qs := AppendRateLimit(buf[:0], bc.h, epoch); len(qs) == 0 {
					b.Fatal("no quota")
				}
			}
		})
	}
}
