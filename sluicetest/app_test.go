package sluicetest_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/echo/sluiceecho"
	"github.com/sluice-go/sluice/adapters/gin/sluicegin"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/fields"
	"github.com/sluice-go/sluice/sluicetest"
)

// These are a user's tests of their own handlers behind sluice: a manual
// clock, a store the test can break and reset, and the fields read as a
// client reads them. Nothing sleeps: time moves when the test moves it.

var start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// perIP is 5 requests a minute per client, a GCRA bucket of 5.
var perIP = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 5, Period: time.Minute, Burst: 5})

func hello(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello\n") }

// The net/http service: every client IP limited; the store fails closed.
func newService(t *testing.T, clock core.Clock, store core.Store) http.Handler {
	limiter, err := core.NewLimiter(store, core.WithFailClosed(0))
	require.NoError(t, err)
	mw, err := sluicehttp.New(httplimit.Config{
		Limiter: limiter,
		Rules:   []httplimit.Rule{{Policy: perIP, Key: httplimit.ClientIP()}},
		Clock:   clock,
	})
	require.NoError(t, err)
	return mw(http.HandlerFunc(hello))
}

func get(h http.Handler, remote string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = remote
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestNetHTTPService(t *testing.T) {
	clock := sluicetest.NewManualClock(start)
	store := sluicetest.NewStore(clock)
	h := newService(t, clock, store)
	const ann, bob = "203.0.113.7:1234", "198.51.100.9:1234"

	for want := int64(4); want >= 0; want-- {
		rec := get(h, ann)
		require.Equal(t, http.StatusOK, rec.Code)
		sluicetest.AssertRemaining(t, rec, "per-ip", want)
	}
	rec := get(h, ann)
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)
	sluicetest.AssertRetryAfter(t, rec, 12) // one unit every 12 s
	sluicetest.AssertRemaining(t, get(h, bob), "per-ip", 4)

	clock.Advance(12 * time.Second)
	sluicetest.AssertRemaining(t, get(h, ann), "per-ip", 0)

	// A reset client starts afresh; the others keep their standing.
	require.NoError(t, store.ResetKey(context.Background(), "203.0.113.7"))
	sluicetest.AssertRemaining(t, get(h, ann), "per-ip", 4)
	sluicetest.AssertRemaining(t, get(h, bob), "per-ip", 4) // its unit of 0 s refilled at 12 s

	// The store goes down: the service fails closed, 503 with Retry-After,
	// and comes back with the store, whose state is as it was.
	store.Fail(nil)
	rec = get(h, ann)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	sluicetest.AssertRetryAfter(t, rec, 1)
	store.Recover()
	sluicetest.AssertRemaining(t, get(h, ann), "per-ip", 3)
}

// The Gin service: failed logins, 3 a minute per IP, on POST /login only.
func TestGinLogin(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	clock := sluicetest.NewManualClock(start)
	limiter, err := core.NewLimiter(sluicetest.NewStore(clock))
	require.NoError(t, err)
	failures := core.MustPolicy(core.PolicyConfig{Name: "login-failures", Algorithm: core.GCRA, Quota: 3, Period: time.Minute, Burst: 3})
	mw, err := sluicegin.New(httplimit.Config{
		Limiter: limiter,
		Rules:   []httplimit.Rule{{Policy: failures, Key: httplimit.ClientIP(), Routes: []string{"POST /login"}, Charge: func(status int) bool { return status >= 400 }}},
		Clock:   clock,
	})
	require.NoError(t, err)
	r := gin.New()
	r.Use(mw)
	r.POST("/login", func(c *gin.Context) {
		if c.GetHeader("Authorization") != "Bearer good" {
			c.String(http.StatusUnauthorized, "no\n")
			return
		}
		c.String(http.StatusOK, "welcome\n")
	})
	login := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/login", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		return rec
	}

	// Successes cost nothing, and their fields say so.
	for range 5 {
		rec := login("good")
		require.Equal(t, http.StatusOK, rec.Code)
		sluicetest.AssertRemaining(t, rec, "login-failures", 3)
	}
	for want := int64(2); want >= 0; want-- {
		rec := login("bad")
		require.Equal(t, http.StatusUnauthorized, rec.Code)
		sluicetest.AssertRemaining(t, rec, "login-failures", want)
	}
	rec := login("good")
	assert.Equal(t, http.StatusTooManyRequests, rec.Code, "three failures: everyone waits, even with the right password")
	sluicetest.AssertRetryAfter(t, rec, 20)
	clock.Advance(20 * time.Second)
	rec = login("good")
	assert.Equal(t, http.StatusOK, rec.Code)
	sluicetest.AssertRemaining(t, rec, "login-failures", 1)
}

// The Echo service: per IP before authentication, per plan after it, as two
// middlewares whose fields add up.
func TestEchoLayers(t *testing.T) {
	clock := sluicetest.NewManualClock(start)
	limiter, err := core.NewLimiter(sluicetest.NewStore(clock))
	require.NoError(t, err)
	free := core.MustPolicy(core.PolicyConfig{Name: "free", Algorithm: core.GCRA, Quota: 2, Period: time.Minute, Burst: 2})
	byIP, err := sluiceecho.New(httplimit.Config{Limiter: limiter, Rules: []httplimit.Rule{{Policy: perIP, Key: httplimit.ClientIP()}}, Clock: clock})
	require.NoError(t, err)
	byPlan, err := sluiceecho.New(httplimit.Config{Limiter: limiter, Rules: []httplimit.Rule{{Policy: free, Key: httplimit.User(func(ctx context.Context) (string, bool) {
		u, ok := ctx.Value("user").(string)
		return u, ok
	})}}, Clock: clock})
	require.NoError(t, err)
	auth := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if u := c.Request().Header.Get("X-User"); u != "" {
				c.Set("user", u)
			}
			return next(c)
		}
	}
	e := echo.New()
	e.Use(byIP, auth, byPlan)
	e.GET("/api/items", func(c echo.Context) error { return c.String(http.StatusOK, "[]\n") })
	items := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/api/items", nil)
		req.Header.Set("X-User", "ann")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec
	}

	rec := items()
	require.Equal(t, http.StatusOK, rec.Code)
	f, err := sluicetest.ParseFields(rec.Result().Header)
	require.NoError(t, err)
	assert.Equal(t, []fields.Policy{{Name: "per-ip", Quota: 5, Window: 60}, {Name: "free", Quota: 2, Window: 60}}, f.Policies)
	assert.Equal(t, []fields.Item{{Name: "per-ip", Remaining: 4, Reset: 12}, {Name: "free", Remaining: 1, Reset: 30}}, f.Limits)
	items()
	rec = items()
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)
	sluicetest.AssertRetryAfter(t, rec, 30)
	sluicetest.AssertRemaining(t, rec, "per-ip", 2)
	sluicetest.AssertRemaining(t, rec, "free", 0)
}
