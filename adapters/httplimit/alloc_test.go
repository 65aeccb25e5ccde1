//go:build !race

// The race detector makes sync.Pool drop items at random, so these counts
// hold only without it.

package httplimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluice-go/sluice/adapters/adapterkit"
	"github.com/sluice-go/sluice/core"
)

// mapValues is a framework's per-request values.
type mapValues map[string]any

func (v mapValues) Get(key string) any { return v[key] }

type userKey struct{}

// allocs counts the allocations of deciding req under rule with DecideHTTP.
func allocs(t *testing.T, rule Rule, req *http.Request, values adapterkit.Values) float64 {
	t.Helper()
	l, err := core.NewLimiter(instantStore{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Limiter: l, Rules: []Rule{rule}})
	if err != nil {
		t.Fatal(err)
	}
	w := &nopWriter{h: http.Header{}}
	return testing.AllocsPerRun(100, func() {
		clear(w.h)
		if _, v := m.DecideHTTP(w, req, "/", values); !v.Proceed {
			t.Fatal("denied")
		}
		if len(w.h[hdrRateLimit]) == 0 {
			t.Fatal("no RateLimit field")
		}
	})
}

var perIP = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})

// An allowed request keyed by its peer's IPv4 address allocates only its
// RateLimit value: the key is the RemoteAddr's own text and RateLimit-Policy
// is precomputed.
func TestAllowedAllocatesOnce(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "198.51.100.7:52000"
	if n := allocs(t, Rule{Policy: perIP, Key: ClientIP()}, req, nil); n != 1 {
		t.Errorf("%v allocations, want 1", n)
	}
}

// Finding the user among the framework's values costs nothing over finding
// it in the request context: the key's copy and the RateLimit value.
func TestUserFromValuesAllocatesNothing(t *testing.T) {
	lookup := func(ctx context.Context) (string, bool) {
		if u, ok := ctx.Value("user").(string); ok {
			return u, true
		}
		u, ok := ctx.Value(userKey{}).(string)
		return u, ok
	}
	rule := Rule{Policy: perIP, Key: User(lookup)}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	if n := allocs(t, rule, req, mapValues{"user": "ann"}); n != 2 {
		t.Errorf("user in the framework's values: %v allocations, want 2", n)
	}
	req = req.WithContext(context.WithValue(req.Context(), userKey{}, "ann"))
	if n := allocs(t, rule, req, nil); n != 2 {
		t.Errorf("user in the request context: %v allocations, want 2", n)
	}
}
