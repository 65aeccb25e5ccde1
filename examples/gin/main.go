// Command gin serves a small site behind sluice's Gin middleware.
//
// GET / is limited per client IP to the reference's worked example: a token
// bucket of 10, refilled at 2 per second. POST /login is limited per IP to 3
// per minute as well, decided together with the per-IP limit (a denied login
// takes nothing from the site-wide allowance). Limits live in memory, or in
// Redis with -redis, falling back to memory if Redis fails.
//
//	go run ./examples/gin [-addr :8080] [-redis 127.0.0.1:6379]
package main

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/sluice-go/sluice/adapters/gin/sluicegin"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/examples/internal/demo"
)

func main() { demo.Main(demo.HTTP(newHandler)) }

// newHandler routes the site, each route behind its own middleware.
func newHandler(limiter *core.Limiter) (http.Handler, error) {
	site, err := sluicegin.New(demo.Site(limiter))
	if err != nil {
		return nil, err
	}
	logins, err := sluicegin.New(demo.Logins(limiter))
	if err != nil {
		return nil, err
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(gin.Recovery())
	r.GET("/", site, func(c *gin.Context) { c.String(http.StatusOK, "hello from sluice\n") })
	r.POST("/login", logins, func(c *gin.Context) { c.String(http.StatusOK, "welcome\n") })
	return r, nil
}
