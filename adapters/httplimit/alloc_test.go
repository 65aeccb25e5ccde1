//go:build !race

// The race detector makes sync.Pool drop items at random, so these counts
// hold only without it.

package httplimit

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// mapValues is a framework's per-request values.
type mapValues map[string]any

func (v mapValues) Get(key string) any { return v[key] }

type userKey struct{}

// allocs counts the allocations of deciding req under rule with DecideHTTP
// oneValuesPerSlab times: an allowed request's fields come from a slab of
// that many (see oneValue), so each run allocates exactly one slab.
func allocs(t *testing.T, rule Rule, req *http.Request, values valueGetter) float64 {
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
		for range oneValuesPerSlab {
			clear(w.h)
			if _, v := m.DecideHTTP(w, req, "/", values); !v.Proceed {
				t.Fatal("denied")
			}
			if len(w.h[hdrRateLimit]) == 0 {
				t.Fatal("no RateLimit field")
			}
		}
	})
}

// An allowed request keyed by its peer's IPv4 address allocates only its
// share of a slab of field values: the key is the RemoteAddr's own text and
// RateLimit-Policy is precomputed.
func TestAllowedAllocatesOnce(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "198.51.100.7:52000"
	if n := allocs(t, Rule{Policy: perIP, Key: ClientIP()}, req, nil); n != 1 {
		t.Errorf("%v allocations for %d requests, want 1", n, oneValuesPerSlab)
	}
}

// Each allowed response gets field values of its own, which a handler may
// write into without touching another response's.
func TestAllowedFieldsAreEachResponses(t *testing.T) {
	l, err := core.NewLimiter(instantStore{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Limiter: l, Rules: []Rule{{Policy: perIP, Key: ClientIP()}}})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "198.51.100.7:52000"
	var hs []http.Header
	for range 2*oneValuesPerSlab + 1 {
		w := &nopWriter{h: http.Header{}}
		m.DecideHTTP(w, req, "/", nil)
		hs = append(hs, w.h)
	}
	for i, h := range hs {
		h[hdrRateLimit][0], h[hdrPolicy][0] = fmt.Sprint("mine ", i), fmt.Sprint("policy ", i)
		h.Add(hdrRateLimit, "more")
	}
	for i, h := range hs {
		if want := []string{fmt.Sprint("mine ", i), "more"}; !slices.Equal(h[hdrRateLimit], want) {
			t.Errorf("response %d: RateLimit %q, want %q", i, h[hdrRateLimit], want)
		}
		if want := fmt.Sprint("policy ", i); h.Get(hdrPolicy) != want {
			t.Errorf("response %d: RateLimit-Policy %q, want %q", i, h.Get(hdrPolicy), want)
		}
	}
}

// Finding the user among the framework's values costs nothing over finding
// it in the request context: the slab of field values, and a share of a
// slab of keys (256 bytes hold 85 copies of "ann").
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
	want := 1.0 // AllocsPerRun rounds the key slabs' share down
	if n := allocs(t, rule, req, mapValues{"user": "ann"}); n != want {
		t.Errorf("user in the framework's values: %v allocations, want %v", n, want)
	}
	req = req.WithContext(context.WithValue(req.Context(), userKey{}, "ann"))
	if n := allocs(t, rule, req, nil); n != want {
		t.Errorf("user in the request context: %v allocations, want %v", n, want)
	}
}

// A policy chosen per request costs no more than a fixed one: the
// RateLimit-Policy value of the choice is precomputed.
func TestSelectedPolicyAllocatesOnce(t *testing.T) {
	free := core.MustPolicy(core.PolicyConfig{Name: "free", Algorithm: core.GCRA, Quota: 2, Period: time.Minute, Burst: 2})
	rule := Rule{
		Policies: []*core.Policy{free, perIP},
		Select:   func(*Request) (*core.Policy, error) { return perIP, nil },
		Key:      ClientIP(),
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "198.51.100.7:52000"
	if n := allocs(t, rule, req, nil); n != 1 {
		t.Errorf("%v allocations for %d requests, want 1", n, oneValuesPerSlab)
	}
}

// An exempt client costs nothing: no key, no decision, no field.
func TestExemptAllocatesNothing(t *testing.T) {
	l, err := core.NewLimiter(instantStore{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Limiter: l, Rules: []Rule{
		{Policy: perIP, Key: ClientIP().Except("10.0.0.0/8", "198.51.100.7")},
		{Policy: roomy, Key: Header("X-Api-Key").Except("internal")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "198.51.100.7:52000"
	req.Header.Set("X-Api-Key", "internal")
	w := &nopWriter{h: http.Header{}}
	n := testing.AllocsPerRun(100, func() {
		if _, v := m.DecideHTTP(w, req, "/", nil); !v.Proceed || len(w.h) != 0 {
			t.Fatal("not exempt")
		}
	})
	if n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

// Taking a slot of a concurrency limit costs an allowed request no
// allocation: its settlement is pooled. The requests allocate only the slab
// their RateLimit values come from, once in oneValuesPerSlab requests.
func TestSlotAllocatesNothing(t *testing.T) {
	slots, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(8)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := core.NewLimiter(instantStore{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Limiter: l, Rules: []Rule{{Policy: perIP, Key: ClientIP()}}, Concurrency: slots,
		Class: func(*Request) core.Class { return core.Critical }})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "198.51.100.7:52000"
	w := &nopWriter{h: http.Header{}}
	n := testing.AllocsPerRun(100, func() {
		for range oneValuesPerSlab {
			clear(w.h)
			_, v := m.DecideHTTP(w, req, "/", nil)
			if !v.Proceed || v.Settlement == nil {
				t.Fatal("no slot")
			}
			v.Settlement.Settle(http.StatusOK)
		}
	})
	if n != 1 {
		t.Errorf("%v allocations for %d requests, want 1 (the slab of RateLimit values)", n, oneValuesPerSlab)
	}
	if slots.InFlight() != 0 {
		t.Errorf("%d in flight", slots.InFlight())
	}
}
