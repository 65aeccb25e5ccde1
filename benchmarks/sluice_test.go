package benchmarks

// Everything here that names sluice's API is in this file, so that a change
// of sluice's names touches nothing else in the module.

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gofiber/fiber/v2"
	"github.com/labstack/echo/v4"
	goredis "github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/echo/sluiceecho"
	"github.com/sluice-go/sluice/adapters/fiber/sluicefiber"
	"github.com/sluice-go/sluice/adapters/gin/sluicegin"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/redis/redisstore"
)

// sluiceContender is what a sluice user calls: Limiter.Take on the memory
// store, under GCRA.
var sluiceContender = contender{lib: "sluice", clocked: true, build: func(tb testing.TB, s setup) allowFunc {
	return sluiceAllow(tb, sluiceMemory(tb, s), sluicePolicy(core.GCRA))
}}

// sluiceStoreContender is the memory store's Take alone, without the
// Limiter in front: the difference between the two is the Limiter's cost.
var sluiceStoreContender = contender{lib: "sluice-store", clocked: true, build: func(tb testing.TB, s setup) allowFunc {
	store, p := sluiceMemory(tb, s), sluicePolicy(core.GCRA)
	return func(ctx context.Context, key string) (bool, error) {
		d, err := store.Take(ctx, core.Request{Key: key, Policy: p, Cost: 1})
		return d.Allowed, err
	}
}}

// sluiceFixedContender is sluice's own fixed window, for the window-edge
// accuracy case: it admits up to twice its quota across an edge like every
// fixed window, which shows that the case tells the algorithms apart. Its
// windows are aligned to the Unix epoch.
var sluiceFixedContender = contender{lib: "sluice-fixed", clocked: true, build: func(tb testing.TB, s setup) allowFunc {
	return sluiceAllow(tb, sluiceMemory(tb, s), sluicePolicy(core.FixedWindow))
}}

// sluicePolicy is the shared policy in sluice's terms: PerSecond's GCRA, or
// the fixed window of the same quota.
func sluicePolicy(alg core.Algorithm) *core.Policy {
	if alg == core.GCRA {
		return core.PerSecond(quota) // burst quota, as the shared policy's
	}
	return core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: alg, Quota: quota, Period: period})
}

// sluiceMemory returns a memory store bounded to maxKeys, set up as s
// says. Its sweep drops state back to full (a GCRA key 10ms after one
// request) every minute.
func sluiceMemory(tb testing.TB, s setup) *memory.Store {
	opts := []memory.Option{memory.WithMaxKeys(maxKeys)}
	if s.clock != nil {
		opts = append(opts, memory.WithClock(s.clock))
	}
	if s.keepKeys {
		opts = append(opts, memory.WithSweepInterval(0))
	}
	store, err := memory.New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = store.Close() })
	return store
}

// errDegraded reports a decision the store could not make: the Limiter
// applied its failure mode instead, which the benchmarks count as an error,
// not as a decision.
var errDegraded = errors.New("sluice: degraded decision (store failed)")

// sluiceAllow is Limiter.Take on store under p.
func sluiceAllow(tb testing.TB, store core.Store, p *core.Policy) allowFunc {
	l, err := core.NewLimiter(store)
	if err != nil {
		tb.Fatal(err)
	}
	return func(ctx context.Context, key string) (bool, error) {
		d, err := l.Take(ctx, core.Request{Key: key, Policy: p, Cost: 1})
		if err == nil && d.Degraded {
			err = errDegraded
		}
		return d.Allowed, err
	}
}

// sluiceRedisContender is the Redis store as it comes (decisions batched
// per round trip, the server's time) behind a Limiter. Its deadline is a
// second, not the default 50ms, so that a busy machine measures slow
// decisions instead of failed ones; the peers have no deadline at all.
var sluiceRedisContender = redisContender{lib: "sluice", build: func(tb testing.TB, c *goredis.Client, prefix string) allowFunc {
	s, err := redisstore.New(c, redisstore.WithPrefix(prefix), redisstore.WithTimeout(time.Second))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return sluiceAllow(tb, s, sluicePolicy(core.GCRA))
}}

// sluiceHTTPConfig limits each client IP address by the shared policy, on a
// memory store.
func sluiceHTTPConfig(tb testing.TB) admit.Config {
	l, err := core.NewLimiter(sluiceMemory(tb, setup{}))
	if err != nil {
		tb.Fatal(err)
	}
	return admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: sluicePolicy(core.GCRA), Key: admit.ClientIP()}}}
}

func sluiceNetHTTP(tb testing.TB) func(http.Handler) http.Handler {
	mw, err := sluicehttp.New(sluiceHTTPConfig(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return mw
}

func sluiceGin(tb testing.TB) gin.HandlerFunc {
	mw, err := sluicegin.New(sluiceHTTPConfig(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return mw
}

func sluiceEcho(tb testing.TB) echo.MiddlewareFunc {
	mw, err := sluiceecho.New(sluiceHTTPConfig(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return mw
}

func sluiceFiber(tb testing.TB) fiber.Handler {
	mw, err := sluicefiber.New(sluiceHTTPConfig(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return mw
}
