package admit

import (
	"context"
	"net/http"
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

// ReturnTurn gives a turn back as Adjust gives units back.
func (s instantStore) ReturnTurn(ctx context.Context, r core.Request, _ time.Duration) (core.Decision, error) {
	r.Cost = -r.Cost
	return s.Adjust(ctx, r)
}
func (instantStore) Reset(context.Context, string, *core.Policy) error { return nil }

type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(int)             {}
