package sluiceecho_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/echo/sluiceecho"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/fields"
	"github.com/sluice-go/sluice/sluicetest"
)

// A user's test of their own handlers behind sluice, with the test kit: a
// manual clock, a store the test can break and reset, and the fields read
// as a client reads them. Nothing sleeps: time moves when the test moves it.

// The Echo service: per IP before authentication, per plan after it, as two
// middlewares whose fields add up.
func TestEchoLayers(t *testing.T) {
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 5, Period: time.Minute, Burst: 5})
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	limiter, err := core.NewLimiter(sluicetest.NewStore(clock))
	require.NoError(t, err)
	free := core.MustPolicy(core.PolicyConfig{Name: "free", Algorithm: core.GCRA, Quota: 2, Period: time.Minute, Burst: 2})
	byIP, err := sluiceecho.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{{Policy: perIP, Key: admit.ClientIP()}}, Clock: clock})
	require.NoError(t, err)
	byPlan, err := sluiceecho.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{{Policy: free, Key: admit.User(func(ctx context.Context) (string, bool) {
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
