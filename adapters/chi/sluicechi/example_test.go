package sluicechi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/chi/sluicechi"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// chi routes after the middleware it runs with r.Use: the middleware asks chi
// where a request will go, so that the login limit applies to POST /login
// alone.
func ExampleNew() {
	store, _ := memory.New()
	limiter, _ := core.NewLimiter(store)
	login := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.FixedWindow, Quota: 3, Period: time.Minute})

	r := chi.NewRouter()
	mw, err := sluicechi.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{
		{Policy: login, Key: admit.ClientIP(), Routes: []string{"POST /login"}},
	}}, r)
	if err != nil {
		panic(err)
	}
	r.Use(mw)
	hello := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") }
	r.Get("/", hello)
	r.Post("/login", hello)

	for _, req := range []*http.Request{httptest.NewRequest("GET", "/", nil), httptest.NewRequest("POST", "/login", nil)} {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		fmt.Printf("%s %s: %d %q\n", req.Method, req.URL.Path, rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// GET /: 200 ""
	// POST /login: 200 "\"login\";q=3;w=60"
}
