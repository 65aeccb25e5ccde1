package sluicechi_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/chi/sluicechi"
	"github.com/sluice-go/sluice/adapters/httplimit/httplimittest"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
)

// Around the whole router (r.Use), chi has not routed the request yet; with
// the Chi option, the middleware asks the router, and sees the route.
func TestChiUse(t *testing.T) {
	httplimittest.Run(t, chiAdapter(func(t *testing.T, cfg admit.Config, routes []string) httplimittest.Server {
		r := chi.NewRouter()
		mw, err := sluicechi.New(cfg, r)
		require.NoError(t, err)
		r.Use(auth, mw)
		for _, route := range routes {
			r.HandleFunc(route, ok)
		}
		return httplimittest.Handler(r)
	}))
}

// chiAdapter runs the behaviour table with serve, and with the middleware
// in r.Use without FindRoute as the placement that cannot see the route.
// (Per route, r.With, see TestChiRouteKeys: the table's root route "/"
// reads as ServeMux's catch-all pattern there.)
func chiAdapter(serve httplimittest.Harness) httplimittest.Adapter {
	return httplimittest.Adapter{
		Serve: serve,
		Blind: func(t *testing.T, cfg admit.Config, routes []string) httplimittest.Server {
			mw, err := sluicehttp.New(cfg)
			require.NoError(t, err)
			r := chi.NewRouter()
			r.Use(auth, mw)
			for _, route := range routes {
				r.HandleFunc(route, ok)
			}
			return httplimittest.Handler(r)
		},
		Param: func(name string) string { return "{" + name + "}" },
		New:   func(cfg admit.Config) error { _, err := sluicehttp.New(cfg); return err },
	}
}

// chiRoute finds the pattern r will route a request to, as chi's routeHTTP
// does: by the raw path if the URL has one.
func chiRoute(r *chi.Mux) func(*http.Request) string {
	return func(req *http.Request) string {
		path := req.URL.RawPath
		if path == "" {
			path = req.URL.Path
		}
		return r.Find(chi.NewRouteContext(), req.Method, path)
	}
}

// The keys a Route key gives under chi, in each placement: chi's pattern
// where the route is known, never a pattern it has only partly matched.
func TestChiRouteKeys(t *testing.T) {
	routeKeyed := func(t *testing.T, env *httplimittest.Env, opts ...sluicehttp.Option) func(http.Handler) http.Handler {
		mw, err := sluicehttp.New(admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{
			{Policy: httplimittest.PerKey, Key: admit.Route()},
		}}, opts...)
		require.NoError(t, err)
		return mw
	}
	routeKeyedChi := func(t *testing.T, env *httplimittest.Env, r chi.Routes) func(http.Handler) http.Handler {
		mw, err := sluicechi.New(admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{
			{Policy: httplimittest.PerKey, Key: admit.Route()},
		}}, r)
		require.NoError(t, err)
		return mw
	}
	get := func(h http.Handler, path string) httplimittest.Resp {
		return httplimittest.Handler(h)(httplimittest.Req{Path: path})
	}

	t.Run("With on a route", func(t *testing.T) {
		env := httplimittest.NewEnv(t)
		r := chi.NewRouter()
		r.With(routeKeyed(t, env)).Get("/items/{id}", ok)
		r.With(routeKeyed(t, env)).Get("/files/*", ok)
		r.Route("/api", func(api chi.Router) {
			api.With(routeKeyed(t, env)).Get("/users/{id}", ok)
		})
		assert.Equal(t, http.StatusOK, get(r, "/items/7").Status)
		assert.Equal(t, http.StatusOK, get(r, "/api/users/7").Status)
		assert.Equal(t, []string{"/items/{id}", "/api/users/{id}"}, env.Keys())
		// chi's "/files/*" reads as the pattern of a Mount, whose handler
		// routes further: unknown, like ServeMux's "/files/".
		assert.Equal(t, http.StatusInternalServerError, get(r, "/files/a/b").Status)
	})

	// chi's root route has the pattern "/", which reads as ServeMux's
	// catch-all: unknown, unless FindRoute says what it is.
	t.Run("With on the root route", func(t *testing.T) {
		env := httplimittest.NewEnv(t)
		r := chi.NewRouter()
		r.With(routeKeyed(t, env)).Get("/", ok)
		assert.Equal(t, http.StatusInternalServerError, get(r, "/").Status)
		assert.Empty(t, env.Keys())

		found := chi.NewRouter()
		found.With(routeKeyed(t, env, sluicehttp.FindRoute(chiRoute(found)))).Get("/", ok)
		assert.Equal(t, http.StatusOK, get(found, "/").Status)
		assert.Equal(t, []string{"/"}, env.Keys())
	})

	t.Run("Use with FindRoute", func(t *testing.T) {
		env := httplimittest.NewEnv(t)
		r := chi.NewRouter()
		r.Use(routeKeyed(t, env, sluicehttp.FindRoute(chiRoute(r))))
		r.Get("/items/{id}", ok)
		r.Route("/api", func(api chi.Router) { api.Get("/users/{id}", ok) })
		assert.Equal(t, http.StatusOK, get(r, "/items/7").Status)
		assert.Equal(t, http.StatusOK, get(r, "/api/users/7").Status)
		assert.Equal(t, http.StatusNotFound, get(r, "/nope").Status, "no route: the Route key leaves the rule out")
		assert.Equal(t, []string{"/items/{id}", "/api/users/{id}"}, env.Keys())
	})

	t.Run("Use with Chi", func(t *testing.T) {
		env := httplimittest.NewEnv(t)
		r := chi.NewRouter()
		r.Use(routeKeyedChi(t, env, r))
		r.Get("/", ok)
		r.Get("/items/{id}", ok)
		api := chi.NewRouter()
		api.Post("/login", ok)
		r.Mount("/api", api)
		assert.Equal(t, http.StatusOK, get(r, "/").Status)
		assert.Equal(t, http.StatusOK, get(r, "/items/7").Status)
		assert.Equal(t, http.StatusOK, httplimittest.Handler(r)(httplimittest.Req{Method: http.MethodPost, Path: "/api/login"}).Status)
		assert.Equal(t, http.StatusNotFound, get(r, "/nope").Status, "no route: the Route key leaves the rule out")
		assert.Equal(t, []string{"/", "/items/{id}", "/api/login"}, env.Keys())
	})

	// Without FindRoute, r.Use runs before chi routes: Request.Pattern is
	// empty, and the route unknown.
	t.Run("Use", func(t *testing.T) {
		env := httplimittest.NewEnv(t)
		r := chi.NewRouter()
		r.Use(routeKeyed(t, env))
		r.Get("/items/{id}", ok)
		resp := get(r, "/items/7")
		assert.Equal(t, http.StatusInternalServerError, resp.Status)
		assert.Equal(t, httplimittest.InternalBody, resp.Body)
		assert.Empty(t, env.Keys())
	})

	// A sub-router's Use runs once the outer router has matched its mount
	// pattern, "/api/*", and set Request.Pattern to it: that is not the
	// request's route, which the sub-router has still to find.
	t.Run("Use in a sub-router", func(t *testing.T) {
		env := httplimittest.NewEnv(t)
		ran := 0
		r := chi.NewRouter()
		r.Route("/api", func(api chi.Router) {
			api.Use(routeKeyed(t, env))
			api.Get("/users/{id}", func(w http.ResponseWriter, r *http.Request) { ran++; ok(w, r) })
		})
		assert.Equal(t, http.StatusInternalServerError, get(r, "/api/users/7").Status)
		assert.Zero(t, ran)
		assert.Empty(t, env.Keys(), "keyed by the mount pattern")
	})
}

// A rule without Routes needs no route: r.Use works as anywhere else, the
// one-line form included.
func TestChiUseWithoutRoutes(t *testing.T) {
	httplimittest.RunLimitByIP(t, func(t *testing.T, p *core.Policy) httplimittest.Server {
		r := chi.NewRouter()
		r.Use(sluicehttp.LimitByIP(p))
		r.Get("/", ok)
		return httplimittest.Handler(r)
	})
}

// ok answers "ok" with the status the request asks for (see
// httplimittest.StatusOf).
func ok(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(httplimittest.StatusOf(r.Context(), r.Header.Get(httplimittest.StatusHeader)))
	_, _ = io.WriteString(w, "ok")
}

// auth puts the user the request names in its context.
func auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get(httplimittest.UserHeader); u != "" {
			r = r.WithContext(httplimittest.WithUser(r.Context(), u))
		}
		next.ServeHTTP(w, r)
	})
}
