package sluicegin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sluicegin "github.com/sluice-go/sluice/adapters/gin"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/adapters/httplimit/httplimittest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

func init() { gin.SetMode(gin.ReleaseMode) }

func ok(c *gin.Context) { c.String(http.StatusOK, "ok") }

// harness installs the middleware engine-wide: Gin knows the route first.
func harness(t *testing.T, cfg httplimit.Config, routes []string) httplimittest.Server {
	mw, err := sluicegin.New(cfg)
	require.NoError(t, err)
	r := gin.New()
	r.Use(mw)
	for _, route := range routes {
		r.Any(route, ok)
	}
	return serve(r)
}

func serve(h http.Handler) httplimittest.Server {
	return func(r httplimittest.Req) httplimittest.Resp {
		req := httptest.NewRequest(r.Method, r.Path, nil)
		req.RemoteAddr = r.Remote
		for k, vs := range r.Header {
			req.Header[k] = vs
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return httplimittest.Resp{Status: rec.Code, Header: rec.Header(), Body: rec.Body.String()}
	}
}

func TestBehaviour(t *testing.T) { httplimittest.Run(t, harness) }

// User keys read what earlier middleware stored with c.Set.
func TestUserFromGinContext(t *testing.T) {
	s, err := memory.New(memory.WithSweepInterval(0))
	require.NoError(t, err)
	defer s.Close()
	var keys []string
	l, err := core.NewLimiter(s, core.WithObserver(func(_ context.Context, e core.Event) { keys = append(keys, e.Key) }))
	require.NoError(t, err)
	mw, err := sluicegin.New(httplimit.Config{
		Limiter: l,
		Rules: []httplimit.Rule{{Policy: httplimittest.PerKey, Key: httplimit.User(func(ctx context.Context) (string, bool) {
			u, ok := ctx.Value("user").(string)
			return u, ok
		})}},
	})
	require.NoError(t, err)
	r := gin.New()
	r.Use(func(c *gin.Context) {
		if u := c.GetHeader("X-User"); u != "" {
			c.Set("user", u)
		}
	}, mw)
	r.GET("/", ok)
	srv := serve(r)
	resp := srv(httplimittest.Req{Method: http.MethodGet, Path: "/", Remote: httplimittest.DefaultRemote, Header: http.Header{"X-User": {"ann"}}})
	assert.Equal(t, `"per-key";r=4;t=1`, resp.Header.Get("RateLimit"))
	resp = srv(httplimittest.Req{Method: http.MethodGet, Path: "/", Remote: httplimittest.DefaultRemote})
	assert.Empty(t, resp.Header.Get("RateLimit"), "no user: the rule does not apply")
	assert.Equal(t, []string{"ann"}, keys)
}

// A denial aborts the chain: later handlers do not run.
func TestDenialAborts(t *testing.T) {
	s, err := memory.New(memory.WithSweepInterval(0))
	require.NoError(t, err)
	defer s.Close()
	l, err := core.NewLimiter(s)
	require.NoError(t, err)
	one := core.MustPolicy(core.Config{Name: "one", Algorithm: core.FixedWindow, Quota: 1, Period: time.Hour})
	mw, err := sluicegin.New(httplimit.Config{Limiter: l, Rules: []httplimit.Rule{{Policy: one, Key: httplimit.Const("all")}}})
	require.NoError(t, err)
	ran := 0
	r := gin.New()
	r.GET("/", mw, func(c *gin.Context) { ran++; ok(c) })
	srv := serve(r)
	assert.Equal(t, 200, srv(httplimittest.Req{Method: http.MethodGet, Path: "/", Remote: httplimittest.DefaultRemote}).Status)
	assert.Equal(t, 429, srv(httplimittest.Req{Method: http.MethodGet, Path: "/", Remote: httplimittest.DefaultRemote}).Status)
	assert.Equal(t, 1, ran)
}
