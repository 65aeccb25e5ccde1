package sluicegin_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/gin/sluicegin"
	"github.com/sluice-go/sluice/adapters/httplimit/httplimittest"
	"github.com/sluice-go/sluice/core"
)

func init() { gin.SetMode(gin.ReleaseMode) }

// ok answers "ok" with the status the request asks for (see
// httplimittest.StatusOf).
func ok(c *gin.Context) {
	c.String(httplimittest.StatusOf(c.Request.Context(), c.GetHeader(httplimittest.StatusHeader)), "ok")
}

// harness installs the middleware engine-wide (Gin knows the route first),
// behind Gin's panic recovery and an authentication step that stores the
// user with c.Set.
func harness(t *testing.T, cfg admit.Config, routes []string) httplimittest.Server {
	mw, err := sluicegin.New(cfg)
	require.NoError(t, err)
	r := gin.New()
	r.Use(gin.RecoveryWithWriter(io.Discard), auth, mw)
	for _, route := range routes {
		r.Any(route, ok)
	}
	return httplimittest.Handler(r)
}

// stack installs two middlewares engine-wide, the outer before the
// authentication step and the inner after it.
func stack(t *testing.T, outer, inner admit.Config, routes []string) httplimittest.Server {
	o, err := sluicegin.New(outer)
	require.NoError(t, err)
	i, err := sluicegin.New(inner)
	require.NoError(t, err)
	r := gin.New()
	r.Use(gin.RecoveryWithWriter(io.Discard), o, auth, i)
	for _, route := range routes {
		r.Any(route, ok)
	}
	return httplimittest.Handler(r)
}

func auth(c *gin.Context) {
	if u := c.GetHeader(httplimittest.UserHeader); u != "" {
		c.Set(httplimittest.UserKey, u)
	}
}

// Gin routes before running any handler: there is no blind placement.
func TestBehaviour(t *testing.T) {
	httplimittest.Run(t, httplimittest.Adapter{
		Serve: harness,
		Stack: stack,
		Param: func(name string) string { return ":" + name },
		New:   func(cfg admit.Config) error { _, err := sluicegin.New(cfg); return err },
	})
}

// User keys also see the request context's values, whatever the engine's
// ContextWithFallback: the middleware decides under c.Request.Context().
func TestUserFromRequestContext(t *testing.T) {
	env := httplimittest.NewEnv(t)
	mw, err := sluicegin.New(admit.Config{
		Limiter: env.Limiter(t, nil),
		Rules:   []admit.Rule{{Policy: httplimittest.PerUser, Key: admit.User(httplimittest.UserOf)}},
	})
	require.NoError(t, err)
	r := gin.New()
	r.Use(func(c *gin.Context) {
		if u := c.GetHeader(httplimittest.UserHeader); u != "" {
			c.Request = c.Request.WithContext(httplimittest.WithUser(c.Request.Context(), u))
		}
	}, mw)
	r.GET("/", ok)
	srv := httplimittest.Handler(r)
	resp := srv(httplimittest.Req{Header: http.Header{httplimittest.UserHeader: {"ann"}}})
	assert.Equal(t, `"per-user";r=4;t=1`, resp.Header.Get("RateLimit"))
	resp = srv(httplimittest.Req{})
	assert.Empty(t, resp.Header.Get("RateLimit"), "no user: the rule does not apply")
	assert.Equal(t, []string{"ann"}, env.Keys())
}

// A denial aborts the chain: later handlers do not run.
func TestDenialAborts(t *testing.T) {
	one := core.MustPolicy(core.PolicyConfig{Name: "one", Algorithm: core.FixedWindow, Quota: 1, Period: time.Hour})
	mw, err := sluicegin.New(admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules:   []admit.Rule{{Policy: one, Key: admit.Const("all")}},
	})
	require.NoError(t, err)
	ran := 0
	r := gin.New()
	r.GET("/", mw, func(c *gin.Context) { ran++; ok(c) })
	srv := httplimittest.Handler(r)
	assert.Equal(t, 200, srv(httplimittest.Req{}).Status)
	assert.Equal(t, 429, srv(httplimittest.Req{}).Status)
	assert.Equal(t, 1, ran)
}

// A rule with Charge sees the status Gin's writer holds after the handlers.
func TestChargeSeesTheStatus(t *testing.T) {
	var seen []int
	mw, err := sluicegin.New(admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules: []admit.Rule{{Policy: httplimittest.LoginFailures, Key: admit.Const("k"), Charge: func(status int) bool {
			seen = append(seen, status)
			return false
		}}},
	})
	require.NoError(t, err)
	r := gin.New()
	r.Use(mw)
	r.GET("/aborted", func(c *gin.Context) { c.AbortWithStatus(http.StatusForbidden) })
	r.GET("/silent", func(*gin.Context) {})
	r.GET("/created", func(c *gin.Context) { c.Status(http.StatusCreated) })
	srv := httplimittest.Handler(r)
	for path, want := range map[string]int{"/aborted": 403, "/silent": 200, "/created": 201} {
		seen = nil
		resp := srv(httplimittest.Req{Path: path})
		assert.Equal(t, want, resp.Status, path)
		assert.Equal(t, []int{want}, seen, path)
	}
}

// The one-line form, as the package documentation has it: on a route.
func TestLimitByIP(t *testing.T) {
	httplimittest.RunLimitByIP(t, func(t *testing.T, p *core.Policy) httplimittest.Server {
		r := gin.New()
		r.GET("/", sluicegin.LimitByIP(p), ok)
		return httplimittest.Handler(r)
	})
}

func TestLimitByIPPanicsOnNilPolicy(t *testing.T) {
	assert.PanicsWithError(t, "admit: rule 0: Policy is nil", func() { sluicegin.LimitByIP(nil) })
}
