package httplimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
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

func BenchmarkDecideHTTP(b *testing.B) {
	p := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	benchDecide(b, admit.Rule{Policy: p, Key: admit.ClientIP()}, 0)
}

// BenchmarkDecideSelect decides under a policy chosen per request.
func BenchmarkDecideSelect(b *testing.B) {
	free := core.MustPolicy(core.PolicyConfig{Name: "free", Algorithm: core.GCRA, Quota: 2, Period: time.Minute, Burst: 2})
	pro := core.MustPolicy(core.PolicyConfig{Name: "pro", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	benchDecide(b, admit.Rule{
		Policies: []*core.Policy{free, pro},
		Select:   func(*admit.Request) (*core.Policy, error) { return pro, nil },
		Key:      admit.ClientIP(),
	}, 0)
}

// BenchmarkDecideExempt decides for an exempt client: no decision at all.
func BenchmarkDecideExempt(b *testing.B) {
	p := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	benchDecide(b, admit.Rule{Policy: p, Key: admit.ClientIP().Except("10.0.0.0/8", "198.51.100.0/24")}, 0)
}

// BenchmarkDecideCharge decides under a rule that charges by status and
// settles each request with a status it declines: the reservation and its
// give-back.
func BenchmarkDecideCharge(b *testing.B) {
	p := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	benchDecide(b, admit.Rule{Policy: p, Key: admit.ClientIP(), Charge: func(status int) bool { return status >= 400 }}, http.StatusOK)
}

// BenchmarkDecideSlot decides a request under a rule and a concurrency
// limit, and settles it: the slot taken and given back.
func BenchmarkDecideSlot(b *testing.B) {
	p := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	slots, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(64)})
	if err != nil {
		b.Fatal(err)
	}
	benchConfig(b, admit.Config{Rules: []admit.Rule{{Policy: p, Key: admit.ClientIP()}}, Concurrency: slots}, http.StatusOK)
}

// benchDecide decides a request from one client under rule, settling it
// with status if it is not 0.
func benchDecide(b *testing.B, rule admit.Rule, status int) {
	benchConfig(b, admit.Config{Rules: []admit.Rule{rule}}, status)
}

// benchConfig is benchDecide for a whole Config, whose Limiter it sets.
func benchConfig(b *testing.B, cfg admit.Config, status int) {
	cfg.Limiter, _ = core.NewLimiter(instantStore{})
	m, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "198.51.100.7:52000"
	w := &nopWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		_, v := m.DecideHTTP(w, req, "/", nil)
		if status != 0 {
			v.Settlement.Settle(status)
		}
	}
}

var perIP = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
var roomy = core.MustPolicy(core.PolicyConfig{Name: "roomy", Algorithm: core.TokenBucket, Quota: 1_000_000, Period: time.Second, Burst: 1 << 30})
