package client

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
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
