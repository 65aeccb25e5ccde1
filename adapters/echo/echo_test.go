package sluiceecho_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sluiceecho "github.com/sluice-go/sluice/adapters/echo"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/adapters/httplimit/httplimittest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

func ok(c echo.Context) error { return c.String(http.StatusOK, "ok") }

func newEcho(t *testing.T, cfg sluiceecho.Config, routes []string) *echo.Echo {
	mw, err := sluiceecho.New(cfg)
	require.NoError(t, err)
	e := echo.New()
	e.Use(mw)
	for _, route := range routes {
		e.Any(route, ok)
	}
	return e
}

// harness installs the middleware with Use: Echo has routed by then.
func harness(t *testing.T, cfg httplimit.Config, routes []string) httplimittest.Server {
	return serve(newEcho(t, sluiceecho.Config{Config: cfg}, routes))
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

func TestSkipper(t *testing.T) {
	s, err := memory.New(memory.WithSweepInterval(0))
	require.NoError(t, err)
	defer s.Close()
	l, err := core.NewLimiter(s)
	require.NoError(t, err)
	e := newEcho(t, sluiceecho.Config{
		Config:  httplimit.Config{Limiter: l, Rules: []httplimit.Rule{{Policy: httplimittest.PerIP, Key: httplimit.ClientIP()}}},
		Skipper: func(c echo.Context) bool { return c.Path() == "/other" },
	}, httplimittest.Routes)
	srv := serve(e)
	for range 12 {
		resp := srv(httplimittest.Req{Method: http.MethodGet, Path: "/other", Remote: httplimittest.DefaultRemote})
		require.Equal(t, 200, resp.Status)
		assert.Empty(t, resp.Header.Get("RateLimit"))
	}
	resp := srv(httplimittest.Req{Method: http.MethodGet, Path: "/", Remote: httplimittest.DefaultRemote})
	assert.Equal(t, `"per-ip";r=9;t=1`, resp.Header.Get("RateLimit"))
}
