package sluicegin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/gin/sluicegin"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// The common case in one line: each client IP may send 3 requests a minute
// to GET /.
func ExampleLimitByIP() {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/", sluicegin.LimitByIP(core.PerMinute(3)), func(c *gin.Context) { c.String(http.StatusOK, "hello") })

	for range 4 {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		fmt.Println(rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// 200 "3-per-minute";q=3;w=60
	// 200 "3-per-minute";q=3;w=60
	// 200 "3-per-minute";q=3;w=60
	// 429 "3-per-minute";q=3;w=60
}

// One middleware for the whole engine: per IP everywhere, and a tighter limit
// on the /login route, decided together.
func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := core.NewLimiter(store)
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	login := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.FixedWindow, Quota: 3, Period: time.Minute})

	mw, err := sluicegin.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{
		{Policy: perIP, Key: admit.ClientIP()},
		{Policy: login, Key: admit.ClientIP(), Routes: []string{"POST /login"}},
	}})
	if err != nil {
		panic(err)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(mw)
	r.GET("/", func(c *gin.Context) { c.String(http.StatusOK, "hello") })
	r.POST("/login", func(c *gin.Context) { c.String(http.StatusOK, "welcome") })

	for _, req := range []*http.Request{httptest.NewRequest("GET", "/", nil), httptest.NewRequest("POST", "/login", nil)} {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// 200 "per-ip";q=10;w=5
	// 200 "per-ip";q=10;w=5, "login";q=3;w=60
}

// A per-user limit on the user an authentication middleware stored with
// c.Set: User keys find it in the context they are given.
func ExampleNew_user() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := core.NewLimiter(store)
	perUser := core.MustPolicy(core.PolicyConfig{Name: "per-user", Algorithm: core.TokenBucket, Quota: 5, Period: time.Minute, Burst: 5})

	mw, err := sluicegin.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{{
		Policy: perUser,
		Key: admit.User(func(ctx context.Context) (string, bool) {
			user, ok := ctx.Value("user").(string)
			return user, ok
		}),
	}}})
	if err != nil {
		panic(err)
	}
	auth := func(c *gin.Context) {
		if token := c.GetHeader("Authorization"); token != "" {
			c.Set("user", token[len("Bearer "):]) // stands for real authentication
		}
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(auth, mw)
	r.GET("/", func(c *gin.Context) { c.String(http.StatusOK, "hello") })

	for _, token := range []string{"Bearer ann", "Bearer ann", "Bearer bob", ""} {
		req := httptest.NewRequest("GET", "/", nil)
		if token != "" {
			req.Header.Set("Authorization", token)
		}
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		fmt.Printf("%d %q\n", rec.Code, rec.Header().Get("RateLimit"))
	}
	// Output:
	// 200 "\"per-user\";r=4;t=12"
	// 200 "\"per-user\";r=3;t=24"
	// 200 "\"per-user\";r=4;t=12"
	// 200 ""
}
