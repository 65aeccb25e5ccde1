package sluicehttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// benchLayered serves GET /v1/search through a per-IP rule and a route
// rule, around h as wrap places the middleware, and measures one allowed
// request: two items in RateLimit.
func benchLayered(b *testing.B, wrap func(mw func(http.Handler) http.Handler, mux *http.ServeMux) http.Handler) {
	store, err := memory.New()
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	limiter, err := core.NewLimiter(store)
	if err != nil {
		b.Fatal(err)
	}
	big := func(name string) *core.Policy {
		return core.MustPolicy(core.PolicyConfig{Name: name, Algorithm: core.GCRA, Quota: 1 << 30, Period: time.Hour, Burst: 1 << 30})
	}
	mw, err := sluicehttp.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{
		{Policy: big("per-ip"), Key: admit.ClientIP()},
		{Policy: big("search"), Key: admit.ClientIP(), Routes: []string{"GET /v1/search"}},
	}})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/search", func(http.ResponseWriter, *http.Request) {})
	h := wrap(mw, mux)
	req := httptest.NewRequest(http.MethodGet, "/v1/search", nil)
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, req)
	}
}

// BenchmarkLayeredAroundMux: the middleware around the mux, which knows
// the route.
func BenchmarkLayeredAroundMux(b *testing.B) {
	benchLayered(b, func(mw func(http.Handler) http.Handler, mux *http.ServeMux) http.Handler { return mw(mux) })
}

// BenchmarkLayeredBeforeRouting: the middleware in front of a handler that
// is no mux (another router): the engine matches the route itself.
func BenchmarkLayeredBeforeRouting(b *testing.B) {
	benchLayered(b, func(mw func(http.Handler) http.Handler, mux *http.ServeMux) http.Handler {
		return mw(http.HandlerFunc(mux.ServeHTTP))
	})
}
