package sluiceecho_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/labstack/echo/v4"

	sluiceecho "github.com/sluice-go/sluice/adapters/echo"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// One middleware for the whole server, skipping the health check with Echo's
// Skipper convention.
func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := core.NewLimiter(store)
	perIP := core.MustPolicy(core.Config{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})

	mw, err := sluiceecho.New(sluiceecho.Config{
		Config:  httplimit.Config{Limiter: limiter, Rules: []httplimit.Rule{{Policy: perIP, Key: httplimit.ClientIP()}}},
		Skipper: func(c echo.Context) bool { return c.Path() == "/healthz" },
	})
	if err != nil {
		panic(err)
	}
	e := echo.New()
	e.Use(mw)
	e.GET("/", func(c echo.Context) error { return c.String(http.StatusOK, "hello") })
	e.GET("/healthz", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })

	for _, path := range []string{"/", "/healthz"} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		fmt.Printf("%d %q\n", rec.Code, rec.Header().Get("RateLimit"))
	}
	// Output:
	// 200 "\"per-ip\";r=9;t=1"
	// 204 ""
}
