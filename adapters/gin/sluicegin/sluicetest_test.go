package sluicegin_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/gin/sluicegin"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
)

// A user's test of their own handlers behind sluice, with the test kit: a
// manual clock, a store the test can break and reset, and the fields read
// as a client reads them. Nothing sleeps: time moves when the test moves it.

// The Gin service: failed logins, 3 a minute per IP, on POST /login only.
func TestGinLogin(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	limiter, err := core.NewLimiter(sluicetest.NewStore(clock))
	require.NoError(t, err)
	failures := core.MustPolicy(core.PolicyConfig{Name: "login-failures", Algorithm: core.GCRA, Quota: 3, Period: time.Minute, Burst: 3})
	mw, err := sluicegin.New(admit.Config{
		Limiter: limiter,
		Rules:   []admit.Rule{{Policy: failures, Key: admit.ClientIP(), Routes: []string{"POST /login"}, Charge: func(status int) bool { return status >= 400 }}},
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
