package benchmarks

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	fiberlimiter "github.com/gofiber/fiber/v2/middleware/limiter"
	"github.com/gofiber/fiber/v2/utils"
	echomw "github.com/labstack/echo/v4/middleware"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	ulmemory "github.com/ulule/limiter/v3/drivers/store/memory"
	"github.com/valyala/fasthttp"
	"golang.org/x/time/rate"
)

// The shared policy: every contender admits quota requests per period with
// a burst of burst, in the closest terms its library offers. README.md's
// table of equivalents says what each library is given.
const (
	quota  = 100
	period = time.Second
	burst  = 100
)

// maxKeys bounds the stores that take a bound (sluice, throttled): room for
// the heap benchmark's million keys, so that none is evicted there.
const maxKeys = 1 << 21

// allowFunc takes one unit from key under the shared policy: whether the
// request is admitted, or why the limiter could not say.
type allowFunc func(ctx context.Context, key string) (bool, error)

// contender is one library's in-process limiter.
type contender struct {
	lib string
	// build returns a fresh limiter under the shared policy, set up as s
	// says; what it holds is released when tb ends.
	build func(tb testing.TB, s setup) allowFunc
	// clocked says whether the limiter can read setup.clock.
	clocked bool
	// align, if set, waits for one of the limiter's windows to start, for
	// a limiter whose windows do not start at a key's first request.
	align func()
}

// setup says how to build a contender beyond the shared policy.
type setup struct {
	// clock, if not nil, is the time a clocked contender reads; the others
	// always read the real time.
	clock *manualClock
	// keepKeys asks the limiter to hold every key for the whole run: no
	// sweep, no expiry. The heap workload sets it, to weigh a million keys
	// in use however long filling them takes. Where a limiter cannot turn
	// expiry off, its window is lengthened instead, with its quota in
	// proportion: a key weighs the same whatever the numbers in its policy.
	keepKeys bool
}

// speedContenders are timed by BenchmarkMemory, sluice first: benchstat
// compares every column with the first. sluice-store is sluice's store
// without the Limiter in front, to show what that layer costs.
func speedContenders() []contender {
	return []contender{sluiceContender, sluiceStoreContender, xrateContender, goLimiterContender, throttledContender, ululeContender, echoContender}
}

// limiterContenders are the limiters of the heap and accuracy workloads:
// each library once, Fiber's included. Fiber offers its limiter only as
// middleware, driven through its handler, so the decision-speed workloads,
// which time the limiter alone, leave it out.
func limiterContenders() []contender {
	return []contender{sluiceContender, xrateContender, goLimiterContender, throttledContender, ululeContender, echoContender, fiberContender}
}

// xrateContender is what a user writes by hand: one golang.org/x/time/rate
// token bucket per key in a sync.Map.
var xrateContender = contender{lib: "xrate", clocked: true, build: func(_ testing.TB, s setup) allowFunc {
	var limiters sync.Map
	every := rate.Every(period / quota)
	return func(_ context.Context, key string) (bool, error) {
		v, ok := limiters.Load(key)
		if !ok {
			v, _ = limiters.LoadOrStore(key, rate.NewLimiter(every, burst))
		}
		if s.clock != nil {
			return v.(*rate.Limiter).AllowN(s.clock.Now(), 1), nil
		}
		return v.(*rate.Limiter).Allow(), nil
	}
}}

// goLimiterContender is sethvargo/go-limiter's memorystore. Its bucket
// refills to Tokens once per Interval counted from the key's first request:
// a fixed window of 100 per second.
// Its sweep drops keys 12 hours after their last request.
var goLimiterContender = contender{lib: "go-limiter", build: func(tb testing.TB, _ setup) allowFunc {
	s, err := memorystore.New(&memorystore.Config{Tokens: burst, Interval: period})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close(context.Background()) })
	return func(ctx context.Context, key string) (bool, error) {
		_, _, _, ok, err := s.Take(ctx, key)
		return ok, err
	}
}}

// throttledContender is throttled/throttled's GCRA on its memstore, bounded
// like sluice's. MaxBurst counts the requests allowed beyond the first, so
// a burst of 100 is MaxBurst 99.
var throttledContender = contender{lib: "throttled", clocked: true, build: func(tb testing.TB, s setup) allowFunc {
	st, err := memstore.New(maxKeys)
	if err != nil {
		tb.Fatal(err)
	}
	if s.clock != nil {
		st.SetTimeNow(s.clock.Now)
	}
	l, err := throttled.NewGCRARateLimiterCtx(throttled.WrapStoreWithContext(st),
		throttled.RateQuota{MaxRate: throttled.PerDuration(quota, period), MaxBurst: burst - 1})
	if err != nil {
		tb.Fatal(err)
	}
	return func(ctx context.Context, key string) (bool, error) {
		limited, _, err := l.RateLimitCtx(ctx, key, 1)
		return err == nil && !limited, err
	}
}}

// ululeContender is ulule/limiter's memory store: a fixed window of 100
// per second starting at the key's first request. A cleaner drops the keys
// whose window has ended every 30 seconds.
var ululeContender = contender{lib: "ulule", build: func(_ testing.TB, s setup) allowFunc {
	opts := ulule.StoreOptions{Prefix: ulule.DefaultPrefix, CleanUpInterval: ulule.DefaultCleanUpInterval}
	if s.keepKeys {
		opts.CleanUpInterval = 0
	}
	l := ulule.New(ulmemory.NewStoreWithOptions(opts), ulule.Rate{Period: period, Limit: quota})
	return func(ctx context.Context, key string) (bool, error) {
		c, err := l.Get(ctx, key)
		return err == nil && !c.Reached, err
	}
}}

// echoContender is Echo's RateLimiterMemoryStore, the store behind its
// RateLimiter middleware: x/time/rate buckets in a map behind one mutex. It
// drops keys 3 minutes after their last request.
var echoContender = contender{lib: "echo", build: func(_ testing.TB, _ setup) allowFunc {
	s := echomw.NewRateLimiterMemoryStoreWithConfig(echomw.RateLimiterMemoryStoreConfig{Rate: rate.Every(period / quota), Burst: burst})
	return func(_ context.Context, key string) (bool, error) { return s.Allow(key) }
}}

// fiberContender is Fiber's limiter middleware (a fixed window), driven
// through a Fiber app: the key is the client's IP address, so keys must be
// IPv4 addresses. Its windows last whole seconds read from a clock that
// ticks once a second, so they end at a tick, whenever the key's first
// request came. Its storage drops a key once its window has ended, and
// cannot be told not to: to keep keys, the window is an hour long.
var fiberContender = contender{lib: "fiber", align: awaitFiberTick, build: func(_ testing.TB, s setup) allowFunc {
	limit := fiberLimiter()
	if s.keepKeys {
		limit = fiberlimiter.New(fiberlimiter.Config{Max: quota * 3600, Expiration: time.Hour})
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/", limit, fiberHello)
	h := app.Handler()
	return func(_ context.Context, key string) (bool, error) {
		ip := net.ParseIP(key)
		if ip == nil {
			return false, fmt.Errorf("fiber contender: key %q is not an IP address", key)
		}
		var req fasthttp.Request
		req.Header.SetMethod(fasthttp.MethodGet)
		req.SetRequestURI("/")
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, &net.TCPAddr{IP: ip, Port: 52000}, nil)
		h(&ctx)
		switch code := ctx.Response.StatusCode(); code {
		case http.StatusOK:
			return true, nil
		case http.StatusTooManyRequests:
			return false, nil
		default:
			return false, fmt.Errorf("fiber contender: status %d", code)
		}
	}
}}

// fiberLimiter is Fiber's limiter under the shared policy (its default
// algorithm, the fixed window).
func fiberLimiter() fiber.Handler {
	return fiberlimiter.New(fiberlimiter.Config{Max: quota, Expiration: period})
}

func fiberHello(c *fiber.Ctx) error { return c.Send(hello) }

var hello = []byte("hello")

// awaitFiberTick returns just after Fiber's clock ticks, which is when its
// limiter's windows end.
func awaitFiberTick() {
	start := atomic.LoadUint32(&utils.Timestamp)
	for atomic.LoadUint32(&utils.Timestamp) == start {
		time.Sleep(time.Millisecond)
	}
}

// manualClock is a clock that moves only when set, for the contenders that
// can read one. It satisfies sluice's core.Clock.
type manualClock struct{ ns atomic.Int64 }

func newManualClock(t time.Time) *manualClock {
	c := new(manualClock)
	c.Set(t)
	return c
}

// Now returns the time last set.
func (c *manualClock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// SleepUntil is never called: nothing here waits on the clock.
func (c *manualClock) SleepUntil(context.Context, time.Time) error {
	panic("manualClock: SleepUntil unused")
}

// AfterFunc is never called: nothing here arms a timer on the clock.
func (c *manualClock) AfterFunc(time.Duration, func()) (stop func() bool) {
	panic("manualClock: AfterFunc unused")
}

// Set moves the clock to t.
func (c *manualClock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// ipKeys returns n distinct IPv4 addresses, the keys of every workload.
func ipKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("10.%d.%d.%d", i>>16&0xff, i>>8&0xff, i&0xff)
	}
	return keys
}

// spread returns the i-th index of a walk over n keys that visits every
// key once per n steps in an order unrelated to their creation, so that
// no contender is favoured by keys made, and so laid out, in sequence.
// 7919 is prime and does not divide 100,000.
func spread(i uint64, n int) int { return int(i * 7919 % uint64(n)) }
