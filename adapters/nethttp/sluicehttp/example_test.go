package sluicehttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// The common case in one line: each client IP may send 3 requests a minute.
func ExampleLimitByIP() {
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })
	mux := http.NewServeMux()
	mux.Handle("/", sluicehttp.LimitByIP(core.PerMinute(3))(hello))

	for range 4 {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		fmt.Println(rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// 200 "3-per-minute";q=3;w=60
	// 200 "3-per-minute";q=3;w=60
	// 200 "3-per-minute";q=3;w=60
	// 429 "3-per-minute";q=3;w=60
}

// Each pattern gets its own middleware: GET / the per-IP limit, POST /login
// the per-IP limit and a tighter one, decided together. Both share the per-IP
// policy, so they share each client's per-IP allowance.
func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := core.NewLimiter(store)
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	login := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.FixedWindow, Quota: 3, Period: time.Minute})
	byIP := admit.Rule{Policy: perIP, Key: admit.ClientIP()}

	site, err := sluicehttp.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{byIP}})
	if err != nil {
		panic(err)
	}
	logins, err := sluicehttp.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{
		byIP, {Policy: login, Key: admit.ClientIP()},
	}})
	if err != nil {
		panic(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", site(hello))
	mux.Handle("POST /login", logins(hello))

	for _, r := range []*http.Request{httptest.NewRequest("GET", "/", nil), httptest.NewRequest("POST", "/login", nil)} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, r)
		fmt.Println(rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// 200 "per-ip";q=10;w=5
	// 200 "per-ip";q=10;w=5, "login";q=3;w=60
}

// One middleware around the whole ServeMux, which it asks for the pattern a
// request will match: the login limit applies to POST /login alone.
func ExampleNew_serveMux() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := core.NewLimiter(store)
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	login := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.FixedWindow, Quota: 3, Period: time.Minute})

	mw, err := sluicehttp.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{
		{Policy: perIP, Key: admit.ClientIP()},
		{Policy: login, Key: admit.ClientIP(), Routes: []string{"POST /login"}},
	}})
	if err != nil {
		panic(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", hello)
	mux.Handle("/login", hello)
	h := mw(mux)

	for _, r := range []*http.Request{httptest.NewRequest("GET", "/login", nil), httptest.NewRequest("POST", "/login", nil)} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		fmt.Println(rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// 200 "per-ip";q=10;w=5
	// 200 "per-ip";q=10;w=5, "login";q=3;w=60
}

// A router that routes after its middleware tells it, with FindRoute,
// where a request will go: here a table of exact paths, so that the login
// limit applies to POST /login alone.
func ExampleFindRoute() {
	store, _ := memory.New()
	limiter, _ := core.NewLimiter(store)
	login := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.FixedWindow, Quota: 3, Period: time.Minute})

	routes := map[string]string{"GET /": "GET /", "POST /login": "POST /login"}
	mw, err := sluicehttp.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{
		{Policy: login, Key: admit.ClientIP(), Routes: []string{"POST /login"}},
	}}, sluicehttp.FindRoute(func(req *http.Request) string { return routes[req.Method+" "+req.URL.Path] }))
	if err != nil {
		panic(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") }))

	for _, req := range []*http.Request{httptest.NewRequest("GET", "/", nil), httptest.NewRequest("POST", "/login", nil)} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%s %s: %d %q\n", req.Method, req.URL.Path, rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// GET /: 200 ""
	// POST /login: 200 "\"login\";q=3;w=60"
}
