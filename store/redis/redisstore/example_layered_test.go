package redisstore_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/redis/redisstore"
)

// A whole configuration, layered: the limits are kept in Redis for a fleet
// of four instances, and decided in memory on this instance's quarter of
// each while Redis fails. Every request is limited per client IP (behind
// the load balancers of 10.0.0.0/8); failed logins per IP, counted by
// status; signed-in users per user; and the requests in flight by a limit
// that follows the service's latency. A request any rule denies takes
// nothing from the others.
func Example_fleetLayered() {
	rdb := goredis.NewClient(&goredis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	shared, err := redisstore.New(rdb, redisstore.WithPrefix("myapp:"))
	if err != nil {
		log.Fatal(err)
	}
	defer shared.Close()
	local, err := memory.New()
	if err != nil {
		log.Fatal(err)
	}
	defer local.Close()
	limiter, err := core.NewLimiter(shared,
		core.WithFallback(local, 4)) // while Redis is down, decide here, on a quarter of each limit (a fleet of 4)
	if err != nil {
		log.Fatal(err)
	}
	gradient, err := backpressure.NewGradient(backpressure.GradientConfig{})
	if err != nil {
		log.Fatal(err)
	}
	slots, err := backpressure.New(backpressure.Config{Controller: gradient, Queue: 64, MaxWait: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	loginFailures := core.MustPolicy(core.PolicyConfig{
		Name: "login-failures", Algorithm: core.GCRA, Quota: 5, Period: time.Minute, Burst: 5,
	})
	mw, err := sluicehttp.New(admit.Config{
		Limiter: limiter,
		Rules: []admit.Rule{
			{Policy: core.PerSecond(20), Key: admit.ClientIP()},
			{Policy: loginFailures, Key: admit.ClientIP(), Routes: []string{"POST /login"}, Charge: func(status int) bool { return status >= 400 }},
			{Policy: core.PerMinute(600), Key: admit.User(userOf)}, // no user yet: the rule does not apply
		},
		TrustedProxies: []string{"10.0.0.0/8"},
		Concurrency:    slots,
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello\n") })
	mux.Handle("POST /login", hello)
	mux.Handle("GET /", hello)
	_ = &http.Server{Addr: ":8080", Handler: mw(mux), ReadHeaderTimeout: 5 * time.Second} // ListenAndServe
}

type sessionUser struct{}

// userOf finds the user an authentication middleware stored in the
// request context.
func userOf(ctx context.Context) (string, bool) {
	user, ok := ctx.Value(sessionUser{}).(string)
	return user, ok
}
