package sluicehttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/adapters/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// Each pattern gets its own middleware: GET / the per-IP limit, POST /login
// the per-IP limit and a tighter one, decided together. Both share the per-IP
// policy, so they share each client's per-IP allowance.
func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := core.NewLimiter(store)
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	login := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.FixedWindow, Quota: 3, Period: time.Minute})
	byIP := httplimit.Rule{Policy: perIP, Key: httplimit.ClientIP()}

	site, err := sluicehttp.New(httplimit.Config{Limiter: limiter, Rules: []httplimit.Rule{byIP}})
	if err != nil {
		panic(err)
	}
	logins, err := sluicehttp.New(httplimit.Config{Limiter: limiter, Rules: []httplimit.Rule{
		byIP, {Policy: login, Key: httplimit.ClientIP()},
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

	mw, err := sluicehttp.New(httplimit.Config{Limiter: limiter, Rules: []httplimit.Rule{
		{Policy: perIP, Key: httplimit.ClientIP()},
		{Policy: login, Key: httplimit.ClientIP(), Routes: []string{"POST /login"}},
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
