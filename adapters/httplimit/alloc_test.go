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

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// mapValues is a framework's per-request values.
type mapValues map[string]any

func (v mapValues) Get(key string) any { return v[key] }

type userKey struct{}

// slabRequests is how many allowed requests with two fields use up exactly
// one slab of field values (valsPerSlab), and less than a slab of their
// text (textPerSlab): a run of that many allocates one slab, and the
// share of a second that AllocsPerRun rounds down.
const slabRequests = valsPerSlab / 2

// allocs counts the allocations of deciding req under rule with DecideHTTP
// slabRequests times.
func allocs(t *testing.T, rule admit.Rule, req *http.Request, values admit.ValueGetter) float64 {
	t.Helper()
	l, err := core.NewLimiter(instantStore{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(admit.Config{Limiter: l, Rules: []admit.Rule{rule}})
	if err != nil {
		t.Fatal(err)
	}
	w := &nopWriter{h: http.Header{}}
	return testing.AllocsPerRun(100, func() {
		for range slabRequests {
			clear(w.h)
			if _, v := m.DecideHTTP(w, req, "/", values); !v.Proceed {
				t.Fatal("denied")
			}
			if len(w.h["Ratelimit"]) == 0 {
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
	if n := allocs(t, admit.Rule{Policy: perIP, Key: admit.ClientIP()}, req, nil); n != 1 {
		t.Errorf("%v allocations for %d requests, want 1", n, slabRequests)
	}
}

// Each allowed response gets field values of its own, which a handler may
// write into without touching another response's.
func TestAllowedFieldsAreEachResponses(t *testing.T) {
	l, err := core.NewLimiter(instantStore{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: perIP, Key: admit.ClientIP()}}})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "198.51.100.7:52000"
	var hs []http.Header
	for range 2*slabRequests + 1 {
		w := &nopWriter{h: http.Header{}}
		m.DecideHTTP(w, req, "/", nil)
		hs = append(hs, w.h)
	}
	for i, h := range hs {
		h["Ratelimit"][0], h["Ratelimit-Policy"][0] = fmt.Sprint("mine ", i), fmt.Sprint("policy ", i)
		h.Add("Ratelimit", "more")
	}
	for i, h := range hs {
		if want := []string{fmt.Sprint("mine ", i), "more"}; !slices.Equal(h["Ratelimit"], want) {
			t.Errorf("response %d: RateLimit %q, want %q", i, h["Ratelimit"], want)
		}
		if want := fmt.Sprint("policy ", i); h.Get("Ratelimit-Policy") != want {
			t.Errorf("response %d: RateLimit-Policy %q, want %q", i, h.Get("Ratelimit-Policy"), want)
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
	rule := admit.Rule{Policy: perIP, Key: admit.User(lookup)}
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
	rule := admit.Rule{
		Policies: []*core.Policy{free, perIP},
		Select:   func(*admit.Request) (*core.Policy, error) { return perIP, nil },
		Key:      admit.ClientIP(),
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "198.51.100.7:52000"
	if n := allocs(t, rule, req, nil); n != 1 {
		t.Errorf("%v allocations for %d requests, want 1", n, slabRequests)
	}
}

// An exempt client costs nothing: no key, no decision, no field.
func TestExemptAllocatesNothing(t *testing.T) {
	l, err := core.NewLimiter(instantStore{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(admit.Config{Limiter: l, Rules: []admit.Rule{
		{Policy: perIP, Key: admit.ClientIP().Except("10.0.0.0/8", "198.51.100.7")},
		{Policy: roomy, Key: admit.Header("X-Api-Key").Except("internal")},
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
// of their field values, once in slabRequests requests.
func TestSlotAllocatesNothing(t *testing.T) {
	slots, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(8)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := core.NewLimiter(instantStore{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: perIP, Key: admit.ClientIP()}}, Concurrency: slots,
		Class: func(*admit.Request) core.Class { return core.Critical }})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "198.51.100.7:52000"
	w := &nopWriter{h: http.Header{}}
	n := testing.AllocsPerRun(100, func() {
		for range slabRequests {
			clear(w.h)
			_, v := m.DecideHTTP(w, req, "/", nil)
			if !v.Proceed || v.Settlement == nil {
				t.Fatal("no slot")
			}
			v.Settlement.Settle(http.StatusOK)
		}
	})
	if n != 1 {
		t.Errorf("%v allocations for %d requests, want 1 (the slab of field values)", n, slabRequests)
	}
	if slots.InFlight() != 0 {
		t.Errorf("%d in flight", slots.InFlight())
	}
}
