package sluicegin_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gin-gonic/gin"

	sluicegin "github.com/sluice-go/sluice/adapters/gin"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// One middleware for the whole engine: per IP everywhere, and a tighter limit
// on the /login route, decided together.
func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := core.NewLimiter(store)
	perIP := core.MustPolicy(core.Config{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	login := core.MustPolicy(core.Config{Name: "login", Algorithm: core.FixedWindow, Quota: 3, Period: time.Minute})

	mw, err := sluicegin.New(httplimit.Config{Limiter: limiter, Rules: []httplimit.Rule{
		{Policy: perIP, Key: httplimit.ClientIP()},
		{Policy: login, Key: httplimit.ClientIP(), Routes: []string{"/login"}},
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
