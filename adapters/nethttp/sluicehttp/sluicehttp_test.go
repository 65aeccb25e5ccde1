package sluicehttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/httplimit/httplimittest"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
)

// ok answers "ok" with the status the request asks for (see
// httplimittest.StatusOf).
func ok(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(httplimittest.StatusOf(r.Context(), r.Header.Get(httplimittest.StatusHeader)))
	_, _ = io.WriteString(w, "ok")
}

// harness wraps each route's handler, as a pattern-scoped middleware, behind
// an authentication step that puts the user in the request context.
func harness(t *testing.T, cfg admit.Config, routes []string) httplimittest.Server {
	mw, err := sluicehttp.New(cfg)
	require.NoError(t, err)
	mux := http.NewServeMux()
	for _, route := range routes {
		mux.Handle(exact(route), auth(mw(http.HandlerFunc(ok))))
	}
	return httplimittest.Handler(mux)
}

// exact writes the route "/" as the pattern of that path alone: "/" is every
// path to a ServeMux.
func exact(route string) string {
	if route == "/" {
		return "/{$}"
	}
	return route
}

// wholeMux wraps the whole ServeMux, which the middleware asks for the
// pattern a request will match.
func wholeMux(t *testing.T, cfg admit.Config, routes []string) httplimittest.Server {
	mw, err := sluicehttp.New(cfg)
	require.NoError(t, err)
	return httplimittest.Handler(auth(mw(serveMux(routes))))
}

// blind wraps a handler that is not a ServeMux (here one that stands for
// any other router), where the route is not known.
func blind(t *testing.T, cfg admit.Config, routes []string) httplimittest.Server {
	mw, err := sluicehttp.New(cfg)
	require.NoError(t, err)
	mux := serveMux(routes)
	return httplimittest.Handler(auth(mw(http.HandlerFunc(mux.ServeHTTP))))
}

func serveMux(routes []string) *http.ServeMux {
	mux := http.NewServeMux()
	for _, route := range routes {
		mux.HandleFunc(exact(route), ok)
	}
	return mux
}

// stack wraps the whole ServeMux in two middlewares, the outer before the
// authentication step and the inner after it.
func stack(t *testing.T, outer, inner admit.Config, routes []string) httplimittest.Server {
	o, err := sluicehttp.New(outer)
	require.NoError(t, err)
	i, err := sluicehttp.New(inner)
	require.NoError(t, err)
	return httplimittest.Handler(o(auth(i(serveMux(routes)))))
}

func adapter(serve httplimittest.Harness) httplimittest.Adapter {
	return httplimittest.Adapter{
		Serve: serve,
		Blind: blind,
		Stack: stack,
		Param: func(name string) string { return "{" + name + "}" },
		New:   func(cfg admit.Config) error { _, err := sluicehttp.New(cfg); return err },
	}
}

func auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get(httplimittest.UserHeader); u != "" {
			r = r.WithContext(httplimittest.WithUser(r.Context(), u))
		}
		next.ServeHTTP(w, r)
	})
}

func TestBehaviour(t *testing.T) { httplimittest.Run(t, adapter(harness)) }

func TestBehaviourAroundServeMux(t *testing.T) { httplimittest.Run(t, adapter(wholeMux)) }

func TestReserveThenReconcile(t *testing.T) {
	mw, err := sluicehttp.New(admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules: []admit.Rule{{
			Policy: httplimittest.PerIP,
			Key:    admit.ClientIP(),
			Cost:   func(*admit.Request) int64 { return 5 }, // the estimate
		}},
		Estimates: true,
	})
	require.NoError(t, err)
	var settled []error
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res := admit.ReservationFrom(r.Context())
		require.NotNil(t, res)
		settled = append(settled, res.Reconcile(r.Context(), 1)) // the actual cost
		ok(w, r)
	}))
	srv := httplimittest.Handler(h)

	first := srv(httplimittest.Req{})
	assert.Equal(t, `"per-ip";r=5;t=3`, first.Header.Get("RateLimit"))
	// 5 reserved, 4 refunded: 9 left before the second estimate of 5.
	second := srv(httplimittest.Req{})
	assert.Equal(t, `"per-ip";r=4;t=3`, second.Header.Get("RateLimit"))
	assert.Equal(t, []error{nil, nil}, settled)
}

func TestNoReservationWithoutReserve(t *testing.T) {
	mw, err := sluicehttp.New(admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules:   []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.ClientIP()}},
	})
	require.NoError(t, err)
	var res *core.Reservation = &core.Reservation{}
	httplimittest.Handler(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res = admit.ReservationFrom(r.Context())
	})))(httplimittest.Req{})
	assert.Nil(t, res)
}

func TestNewRejectsBadConfig(t *testing.T) {
	_, err := sluicehttp.New(admit.Config{})
	require.Error(t, err)
}

// A denial through a real server: the response reaches the client intact.
func TestOverTheWire(t *testing.T) {
	mw, err := sluicehttp.New(admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules:   []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.ClientIP()}},
	})
	require.NoError(t, err)
	ts := httptest.NewServer(mw(http.HandlerFunc(ok)))
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var statuses []int
	var last *http.Response
	for range 11 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
		require.NoError(t, err)
		resp, err := ts.Client().Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
		last = resp
		if resp.StatusCode == http.StatusTooManyRequests {
			assert.True(t, strings.HasPrefix(string(body), `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded"`))
		}
	}
	assert.Equal(t, []int{200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 429}, statuses)
	assert.Equal(t, "1", last.Header.Get("Retry-After"))
	assert.Equal(t, `"per-ip";r=0;t=1`, last.Header.Get("RateLimit"))
	assert.Equal(t, `"per-ip";q=10;w=5`, last.Header.Get("RateLimit-Policy"))
}

// Many goroutines, one client: pooled state is never shared between
// requests, and exactly the bucket's worth pass.
func TestConcurrentRequests(t *testing.T) {
	mw, err := sluicehttp.New(admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules: []admit.Rule{
			{Policy: httplimittest.PerIP, Key: admit.ClientIP()},
			{Policy: httplimittest.PerKey, Key: admit.Header("X-Api-Key")},
		},
	})
	require.NoError(t, err)
	h := mw(http.HandlerFunc(ok))
	const goroutines, each = 8, 25
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		wg     sync.WaitGroup
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				req := httptest.NewRequest(http.MethodGet, "/", nil)
				req.RemoteAddr = "192.0.2.1:1"
				req.Header.Set("X-Api-Key", "key-"+strconv.Itoa(g%2))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				mu.Lock()
				counts[rec.Code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Two API keys of 5 each, under one IP of 10: exactly 10 pass.
	assert.Equal(t, map[int]int{200: 10, 429: goroutines*each - 10}, counts)
}

// Each response has RateLimit-Policy values of its own: a handler that
// rewrites the value in place (as some header-scrubbing middleware does)
// changes its own response only.
func TestPolicyValueNotShared(t *testing.T) {
	mw, err := sluicehttp.New(admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules:   []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.ClientIP()}},
	})
	require.NoError(t, err)
	scrub := true
	srv := httplimittest.Handler(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if scrub {
			w.Header()["Ratelimit-Policy"][0] = "x"
			w.Header()["Ratelimit"][0] = "y"
		}
		ok(w, r)
	})))
	first := srv(httplimittest.Req{})
	assert.Equal(t, []string{"x"}, first.Header.Values("RateLimit-Policy"))
	scrub = false
	second := srv(httplimittest.Req{})
	assert.Equal(t, []string{httplimittest.PerIPPolicy}, second.Header.Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"per-ip";r=8;t=1`}, second.Header.Values("RateLimit"))
}

// Around a ServeMux inside another's pattern, the route is the inner mux's
// pattern, not the outer one's Request.Pattern.
func TestServeMuxInServeMux(t *testing.T) {
	env := httplimittest.NewEnv(t)
	mw, err := sluicehttp.New(admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{
		{Policy: httplimittest.Login, Key: admit.Route(), Routes: []string{"POST /api/login"}},
	}})
	require.NoError(t, err)
	api := http.NewServeMux()
	api.HandleFunc("POST /api/login", ok)
	api.HandleFunc("/api/other", ok)
	outer := http.NewServeMux()
	outer.Handle("/api/", mw(api))
	srv := httplimittest.Handler(outer)

	assert.Equal(t, `"login";r=2;t=60`, srv(httplimittest.Req{Method: http.MethodPost, Path: "/api/login"}).Header.Get("RateLimit"))
	assert.Empty(t, srv(httplimittest.Req{Path: "/api/other"}).Header.Get("RateLimit"))
	assert.Equal(t, []string{"POST /api/login"}, env.Keys())
}

// Around the handler of a pattern that matches a whole subtree ("/api/",
// "/api/{rest...}", the catch-all "/"), the handler may route the request
// further, as http.StripPrefix in front of another mux does: the outer
// pattern is not the request's route. A rule with Routes fails the request
// rather than never matching, and the handler never runs unlimited.
func TestRouterInSubtreePattern(t *testing.T) {
	stripAPI := func(inner http.Handler) http.Handler { return http.StripPrefix("/api", inner) }
	otherRouter := func(inner http.Handler) http.Handler { return http.HandlerFunc(inner.ServeHTTP) }
	for _, tc := range []struct {
		pattern, path string
		wrap          func(inner http.Handler) http.Handler
	}{
		{"/api/", "/api/login", stripAPI},
		{"/api/{rest...}", "/api/login", stripAPI},
		{"/", "/login", otherRouter},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			env := httplimittest.NewEnv(t)
			mw, err := sluicehttp.New(admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{
				{Policy: httplimittest.PerIP, Key: admit.ClientIP()},
				{Policy: httplimittest.Login, Key: admit.ClientIP(), Routes: []string{"POST /login"}},
			}})
			require.NoError(t, err)
			ran := 0
			inner := http.NewServeMux()
			inner.HandleFunc("POST /login", func(http.ResponseWriter, *http.Request) { ran++ })
			outer := http.NewServeMux()
			outer.Handle(tc.pattern, mw(tc.wrap(inner)))
			srv := httplimittest.Handler(outer)
			for range 5 {
				resp := srv(httplimittest.Req{Method: http.MethodPost, Path: tc.path})
				assert.Equal(t, http.StatusInternalServerError, resp.Status)
				assert.Equal(t, httplimittest.InternalBody, resp.Body)
			}
			assert.Zero(t, ran, "the login handler ran with the login rule left out")
			assert.Empty(t, env.Keys())
		})
	}
}

// Rules without Routes need no route: around a subtree pattern's handler
// they limit as anywhere else.
func TestSubtreePatternWithoutRoutes(t *testing.T) {
	mw, err := sluicehttp.New(admit.Config{Limiter: httplimittest.NewEnv(t).Limiter(t, nil), Rules: []admit.Rule{
		{Policy: httplimittest.PerIP, Key: admit.ClientIP()},
	}})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/static/", mw(http.HandlerFunc(ok)))
	resp := httplimittest.Handler(mux)(httplimittest.Req{Path: "/static/app.js"})
	assert.Equal(t, http.StatusOK, resp.Status)
	assert.Equal(t, `"per-ip";r=9;t=1`, resp.Header.Get("RateLimit"))
}

// The placement the package documentation recommends inside an outer
// pattern: the middleware around the inner mux, inside http.StripPrefix, so
// that it sees the inner mux's patterns.
func TestStripPrefixAroundMiddleware(t *testing.T) {
	env := httplimittest.NewEnv(t)
	mw, err := sluicehttp.New(admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{
		{Policy: httplimittest.Login, Key: admit.Route(), Routes: []string{"POST /login"}},
	}})
	require.NoError(t, err)
	inner := http.NewServeMux()
	inner.HandleFunc("POST /login", ok)
	inner.HandleFunc("/other", ok)
	outer := http.NewServeMux()
	outer.Handle("/api/", http.StripPrefix("/api", mw(inner)))
	srv := httplimittest.Handler(outer)

	var got []int
	for range 4 {
		got = append(got, srv(httplimittest.Req{Method: http.MethodPost, Path: "/api/login"}).Status)
	}
	assert.Equal(t, []int{200, 200, 200, 429}, got)
	other := srv(httplimittest.Req{Method: http.MethodPost, Path: "/api/other"})
	assert.Equal(t, http.StatusOK, other.Status)
	assert.Empty(t, other.Header.Get("RateLimit"))
	assert.Equal(t, []string{"POST /login", "POST /login", "POST /login", "POST /login"}, env.Keys())
}

// A pattern without a method ("/login") hands every method to its handler,
// and net/http accepts any token as a method, case and all: a "POST /login"
// entry limits only the requests whose method is exactly "POST", while the
// "/login" entry the documentation recommends for such a route limits them
// all.
func TestMethodlessPattern(t *testing.T) {
	methods := []string{http.MethodPost, "post", http.MethodPut, "XPOST"}
	for entry, want := range map[string][]int{
		// POST, post, PUT, XPOST; four times.
		"POST /login": {200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 429, 200, 200, 200},
		"/login":      {200, 200, 200, 429, 429, 429, 429, 429, 429, 429, 429, 429, 429, 429, 429, 429},
	} {
		t.Run(entry, func(t *testing.T) {
			mw, err := sluicehttp.New(admit.Config{Limiter: httplimittest.NewEnv(t).Limiter(t, nil), Rules: []admit.Rule{
				{Policy: httplimittest.Login, Key: admit.ClientIP(), Routes: []string{entry}},
			}})
			require.NoError(t, err)
			mux := http.NewServeMux()
			mux.HandleFunc("/login", ok)
			h := mw(mux)
			var got []int
			for range 4 {
				for _, m := range methods {
					req := httptest.NewRequest(m, "/login", nil)
					req.RemoteAddr = "192.0.2.1:1234"
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					got = append(got, rec.Code)
				}
			}
			assert.Equal(t, want, got)
		})
	}
}

// The one-line form, as the package documentation has it.
func TestLimitByIP(t *testing.T) {
	httplimittest.RunLimitByIP(t, func(t *testing.T, p *core.Policy) httplimittest.Server {
		mux := http.NewServeMux()
		mux.Handle("/", sluicehttp.LimitByIP(p)(http.HandlerFunc(ok)))
		return httplimittest.Handler(mux)
	})
}

func TestLimitByIPPanicsOnNilPolicy(t *testing.T) {
	assert.PanicsWithError(t, "admit: rule 0: Policy is nil", func() { sluicehttp.LimitByIP(nil) })
}
