package benchmarks

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gofiber/fiber/v2"
	"github.com/labstack/echo/v4"
	echomw "github.com/labstack/echo/v4/middleware"
	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	ululegin "github.com/ulule/limiter/v3/drivers/middleware/gin"
	ululestd "github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	ulmemory "github.com/ulule/limiter/v3/drivers/store/memory"
	"github.com/valyala/fasthttp"
	"golang.org/x/time/rate"
)

// middleware is one limiter in front of one framework's handler of GET /,
// which writes "hello". Every limiter keys requests by the client's IP
// address, on its library's memory store, under the shared policy.
type middleware struct {
	fw, lib string
	// build returns the framework serving GET / behind the limiter, or
	// behind none for lib "bare".
	build func(tb testing.TB, w writer) server
}

// writer is how a net/http framework's responses are written: to one
// reused writer, as a server's pools would, or to a fresh
// httptest.ResponseRecorder per request, as a user's tests would. Fiber
// has its own, and ignores it.
type writer int

const (
	reusedWriter writer = iota
	recorderWriter
)

// server answers one GET / from client c and returns the status.
type server func(c *client) int

// client is a client address in both frameworks' forms.
type client struct {
	remoteAddr string
	tcp        *net.TCPAddr
}

// clients returns n clients, at the addresses ipKeys(n).
func clients(n int) []client {
	cs := make([]client, n)
	for i, k := range ipKeys(n) {
		ip := net.ParseIP(k).To4()
		cs[i] = client{remoteAddr: k + ":52000", tcp: &net.TCPAddr{IP: ip, Port: 52000}}
	}
	return cs
}

// middlewares lists, per framework, the bare handler, sluice's adapter and
// the peers' middleware, in the order benchstat shows them.
func middlewares() []middleware {
	return []middleware{
		{"nethttp", "bare", func(_ testing.TB, w writer) server { return stdServer(w, nil) }},
		{"nethttp", "sluice", func(tb testing.TB, w writer) server { return stdServer(w, sluiceNetHTTP(tb)) }},
		{"nethttp", "ulule", func(_ testing.TB, w writer) server {
			l := ulule.New(ulmemory.NewStore(), ulule.Rate{Period: period, Limit: quota})
			return stdServer(w, ululestd.NewMiddleware(l).Handler)
		}},
		{"nethttp", "go-limiter", func(tb testing.TB, w writer) server {
			s, err := memorystore.New(&memorystore.Config{Tokens: burst, Interval: period})
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { _ = s.Close(context.Background()) })
			mw, err := httplimit.NewMiddleware(s, httplimit.IPKeyFunc())
			if err != nil {
				tb.Fatal(err)
			}
			return stdServer(w, mw.Handle)
		}},
		{"nethttp", "throttled", func(tb testing.TB, w writer) server {
			st, err := memstore.NewCtx(maxKeys)
			if err != nil {
				tb.Fatal(err)
			}
			l, err := throttled.NewGCRARateLimiterCtx(st, throttled.RateQuota{MaxRate: throttled.PerDuration(quota, period), MaxBurst: burst - 1})
			if err != nil {
				tb.Fatal(err)
			}
			mw := &throttled.HTTPRateLimiterCtx{RateLimiter: l, VaryBy: &throttled.VaryBy{RemoteAddr: true}}
			return stdServer(w, mw.RateLimit)
		}},
		{"gin", "bare", func(_ testing.TB, w writer) server { return ginServer(w, nil) }},
		{"gin", "sluice", func(tb testing.TB, w writer) server { return ginServer(w, sluiceGin(tb)) }},
		{"gin", "ulule", func(_ testing.TB, w writer) server {
			l := ulule.New(ulmemory.NewStore(), ulule.Rate{Period: period, Limit: quota})
			return ginServer(w, ululegin.NewMiddleware(l))
		}},
		{"echo", "bare", func(_ testing.TB, w writer) server { return echoServer(w, nil) }},
		{"echo", "sluice", func(tb testing.TB, w writer) server { return echoServer(w, sluiceEcho(tb)) }},
		{"echo", "echo", func(_ testing.TB, w writer) server {
			s := echomw.NewRateLimiterMemoryStoreWithConfig(echomw.RateLimiterMemoryStoreConfig{Rate: rate.Every(period / quota), Burst: burst})
			return echoServer(w, echomw.RateLimiter(s))
		}},
		{"fiber", "bare", func(_ testing.TB, w writer) server { return fiberServer(nil) }},
		{"fiber", "sluice", func(tb testing.TB, w writer) server { return fiberServer(sluiceFiber(tb)) }},
		{"fiber", "fiber", func(_ testing.TB, w writer) server { return fiberServer(fiberLimiter()) }},
	}
}

// BenchmarkHTTP times each framework answering GET /, bare and behind each
// limiter, on one reused request. keys=1 is one client over its limit:
// after the first 100 requests, answers are 429 but for the 100 a second
// the policy refills. keys=100000 is many clients within their limits:
// every answer is 200. It fails if a limiter answers otherwise: any other
// status, a 429 to a client within its limit, or more 200s to the hot
// client than the policy allows.
func BenchmarkHTTP(b *testing.B) { benchmarkHTTP(b, reusedWriter) }

// BenchmarkHTTPRecorder is BenchmarkHTTP for the net/http frameworks with
// a fresh httptest.ResponseRecorder per request, as a user's test writes
// it: the recorder's own work (its header map, its copy of the header when
// the status is written, its body buffer) is in every figure, the bare
// handler's too.
func BenchmarkHTTPRecorder(b *testing.B) { benchmarkHTTP(b, recorderWriter) }

func benchmarkHTTP(b *testing.B, kind writer) {
	all := clients(manyKeys)
	for _, m := range middlewares() {
		if kind == recorderWriter && m.fw == "fiber" {
			continue // fasthttp has no ResponseRecorder
		}
		for _, keys := range []int{1, manyKeys} {
			cs := all[:keys]
			b.Run(fmt.Sprintf("fw=%s/keys=%d/lib=%s", m.fw, keys, m.lib), func(b *testing.B) {
				serve := m.build(b, kind)
				for i := range cs { // every client known; the hot one over its limit
					serve(&cs[i])
				}
				if keys == 1 {
					for range burst {
						serve(&cs[0])
					}
				}
				var tally statusTally
				start := time.Now()
				b.ReportAllocs()
				b.ResetTimer()
				var i uint64
				for b.Loop() {
					i++
					tally.add(serve(&cs[spread(i, keys)]))
				}
				b.StopTimer()
				if err := tally.check(m.lib == "bare", keys, time.Since(start)); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// statusTally counts the statuses of a run.
type statusTally struct{ ok, denied, other int }

func (t *statusTally) add(code int) {
	switch code {
	case http.StatusOK:
		t.ok++
	case http.StatusTooManyRequests:
		t.denied++
	default:
		t.other++
	}
}

// check says whether the statuses of a run of length elapsed over keys
// clients, of which the first was over its limit, fit the shared policy
// (bare: no limit at all).
func (t *statusTally) check(bare bool, keys int, elapsed time.Duration) error {
	if t.other > 0 {
		return fmt.Errorf("%d answers neither 200 nor 429", t.other)
	}
	if bare || keys > 1 {
		if t.denied > 0 {
			return fmt.Errorf("%d answers 429 to clients within their limit", t.denied)
		}
		return nil
	}
	if most := policyMax(elapsed); t.ok > most {
		return fmt.Errorf("%d answers 200 to a client over its limit in %v; the policy allows %d", t.ok, elapsed, most)
	}
	return nil
}

// policyMax is the most the shared policy admits to one key in a span of d
// that starts with the key's bucket full (or, for a fixed window, no more
// than one window edge in the span): the burst plus what refills in d.
func policyMax(d time.Duration) int {
	return burst + int(int64(d)*quota/int64(period))
}

// stdServer serves GET / through a ServeMux, with mw, if not nil, around
// the handler, answering on one reused request and response writer.
func stdServer(w writer, mw func(http.Handler) http.Handler) server {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(hello) })
	if mw != nil {
		h = mw(h)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", h)
	return serveHandler(w, mux)
}

func ginServer(w writer, mw gin.HandlerFunc) server {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	handlers := []gin.HandlerFunc{func(c *gin.Context) { _, _ = c.Writer.Write(hello) }}
	if mw != nil {
		handlers = append([]gin.HandlerFunc{mw}, handlers...)
	}
	r.GET("/", handlers...)
	return serveHandler(w, r)
}

func echoServer(w writer, mw echo.MiddlewareFunc) server {
	e := echo.New()
	var mws []echo.MiddlewareFunc
	if mw != nil {
		mws = append(mws, mw)
	}
	e.GET("/", func(c echo.Context) error { _, err := c.Response().Write(hello); return err }, mws...)
	return serveHandler(w, e)
}

// serveHandler answers with h on one reused request and, as kind says, a
// reused response writer or a fresh recorder per request.
func serveHandler(kind writer, h http.Handler) server {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	if kind == recorderWriter {
		return func(c *client) int {
			req.RemoteAddr = c.remoteAddr
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec.Code
		}
	}
	w := &responseWriter{h: http.Header{}}
	return func(c *client) int {
		req.RemoteAddr = c.remoteAddr
		clear(w.h)
		w.code = http.StatusOK
		h.ServeHTTP(w, req)
		return w.code
	}
}

// responseWriter is a reusable http.ResponseWriter that discards the body.
type responseWriter struct {
	h    http.Header
	code int
}

func (w *responseWriter) Header() http.Header         { return w.h }
func (w *responseWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *responseWriter) WriteHeader(code int)        { w.code = code }

// fiberServer serves GET / with Fiber, with mw, if not nil, before the
// handler, on one reused request context.
func fiberServer(mw fiber.Handler) server {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	handlers := []fiber.Handler{fiberHello}
	if mw != nil {
		handlers = append([]fiber.Handler{mw}, handlers...)
	}
	app.Get("/", handlers...)
	h := app.Handler()
	var req fasthttp.Request
	req.Header.SetMethod(fasthttp.MethodGet)
	req.SetRequestURI("/")
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 0), Port: 52000}, nil)
	return func(c *client) int {
		ctx.SetRemoteAddr(c.tcp)
		ctx.Response.Reset()
		h(&ctx)
		return ctx.Response.StatusCode()
	}
}
