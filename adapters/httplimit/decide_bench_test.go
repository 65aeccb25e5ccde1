package httplimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
)

// instantStore grants everything at once, so BenchmarkDecideHTTP measures
// this package alone.
type instantStore struct{}

func (instantStore) Take(_ context.Context, r core.Request) (core.Decision, error) {
	return core.Decision{Policy: r.Policy, Allowed: true, Limit: r.Policy.Burst(), Remaining: 9, ResetAfter: time.Second}, nil
}
func (s instantStore) TakeAll(ctx context.Context, rs []core.Request, ds []core.Decision) error {
	for i, r := range rs {
		ds[i], _ = s.Take(ctx, r)
	}
	return nil
}
func (instantStore) Adjust(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, nil
}
func (instantStore) Reset(context.Context, string, *core.Policy) error { return nil }

type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(int)             {}

func BenchmarkDecideHTTP(b *testing.B) {
	l, _ := core.NewLimiter(instantStore{})
	p := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	m, err := New(Config{Limiter: l, Rules: []Rule{{Policy: p, Key: ClientIP()}}})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "198.51.100.7:52000"
	w := &nopWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		m.DecideHTTP(w, req, "/", nil)
	}
}
