package adapters

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gofiber/fiber/v2"
	fiberv3 "github.com/gofiber/fiber/v3"
	"github.com/labstack/echo/v4"
	echov5 "github.com/labstack/echo/v5"
	"github.com/valyala/fasthttp"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/echo/sluiceecho"
	"github.com/sluice-go/sluice/adapters/echo/sluiceechov5"
	"github.com/sluice-go/sluice/adapters/fiber/sluicefiber"
	"github.com/sluice-go/sluice/adapters/fiber/sluicefiberv3"
	"github.com/sluice-go/sluice/adapters/gin/sluicegin"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// BenchmarkOverhead serves GET / with each framework: bare, behind a
// pass-through middleware (noop), and behind sluice allowing and denying.
func BenchmarkOverhead(b *testing.B) {
	for _, fw := range frameworks {
		b.Run(fw.name, func(b *testing.B) {
			b.Run("bare", func(b *testing.B) { fw.run(b, nil, http.StatusOK) })
			b.Run("noop", func(b *testing.B) { fw.run(b, noop, http.StatusOK) })
			b.Run("allow", func(b *testing.B) { fw.run(b, allowPolicy, http.StatusOK) })
			b.Run("deny", func(b *testing.B) { fw.run(b, denyPolicy, http.StatusTooManyRequests) })
		})
	}
}

// BenchmarkStore is the memory store's share of the allow path: one
// limiter.Take on one key, what every adapter's allow case includes.
func BenchmarkStore(b *testing.B) {
	cfg := config(b, allowPolicy)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cfg.Limiter.Take(ctx, core.Request{Key: "198.51.100.7", Policy: allowPolicy, Cost: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

var body = []byte("ok")

// The allow path never runs dry (a bucket of 2^40 refilled at 10^6/s); the
// deny path's window is spent before timing starts.
var (
	// noop stands for a pass-through middleware: the framework's own cost of
	// running one.
	noop        = core.MustPolicy(core.PolicyConfig{Name: "noop", Algorithm: core.FixedWindow, Quota: 1, Period: time.Second})
	allowPolicy = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 1_000_000, Period: time.Second, Burst: 1 << 40})
	denyPolicy  = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.FixedWindow, Quota: 1, Period: time.Hour})
)

type framework struct {
	name string
	// run times the framework serving GET / with sluice limiting by p in
	// front of the handler (nil: bare; noop: a pass-through middleware),
	// expecting status want.
	run func(b *testing.B, p *core.Policy, want int)
}

var frameworks = []framework{
	{"nethttp", std(func(b *testing.B, p *core.Policy, next http.Handler) http.Handler {
		mw, err := sluicehttp.New(config(b, p))
		if err != nil {
			b.Fatal(err)
		}
		return mw(next)
	})},
	{"gin", func(b *testing.B, p *core.Policy, want int) {
		gin.SetMode(gin.ReleaseMode)
		r := gin.New()
		handlers := []gin.HandlerFunc{func(c *gin.Context) { _, _ = c.Writer.Write(body) }}
		switch p {
		case nil:
		case noop:
			handlers = append([]gin.HandlerFunc{func(c *gin.Context) { c.Next() }}, handlers...)
		default:
			mw, err := sluicegin.New(config(b, p))
			if err != nil {
				b.Fatal(err)
			}
			handlers = append([]gin.HandlerFunc{mw}, handlers...)
		}
		r.GET("/", handlers...)
		serveStd(b, r, want)
	}},
	{"echo", func(b *testing.B, p *core.Policy, want int) {
		e := echo.New()
		var mws []echo.MiddlewareFunc
		switch p {
		case nil:
		case noop:
			mws = append(mws, func(next echo.HandlerFunc) echo.HandlerFunc {
				return func(c echo.Context) error { return next(c) }
			})
		default:
			mw, err := sluiceecho.New(config(b, p))
			if err != nil {
				b.Fatal(err)
			}
			mws = append(mws, mw)
		}
		e.GET("/", func(c echo.Context) error { _, err := c.Response().Write(body); return err }, mws...)
		serveStd(b, e, want)
	}},
	{"fiber", func(b *testing.B, p *core.Policy, want int) {
		app := fiber.New(fiber.Config{DisableStartupMessage: true})
		handlers := []fiber.Handler{func(c *fiber.Ctx) error { return c.Send(body) }}
		switch p {
		case nil:
		case noop:
			handlers = append([]fiber.Handler{func(c *fiber.Ctx) error { return c.Next() }}, handlers...)
		default:
			mw, err := sluicefiber.New(config(b, p))
			if err != nil {
				b.Fatal(err)
			}
			handlers = append([]fiber.Handler{mw}, handlers...)
		}
		app.Get("/", handlers...)
		serveFast(b, app.Handler(), want)
	}},
	{"echov5", func(b *testing.B, p *core.Policy, want int) {
		e := echov5.New()
		var mws []echov5.MiddlewareFunc
		switch p {
		case nil:
		case noop:
			mws = append(mws, func(next echov5.HandlerFunc) echov5.HandlerFunc {
				return func(c *echov5.Context) error { return next(c) }
			})
		default:
			mw, err := sluiceechov5.New(config(b, p))
			if err != nil {
				b.Fatal(err)
			}
			mws = append(mws, mw)
		}
		e.GET("/", func(c *echov5.Context) error { _, err := c.Response().Write(body); return err }, mws...)
		serveStd(b, e, want)
	}},
	{"fiberv3", func(b *testing.B, p *core.Policy, want int) {
		app := fiberv3.New()
		handlers := []any{func(c fiberv3.Ctx) error { return c.Send(body) }}
		switch p {
		case nil:
		case noop:
			handlers = append([]any{func(c fiberv3.Ctx) error { return c.Next() }}, handlers...)
		default:
			mw, err := sluicefiberv3.New(config(b, p))
			if err != nil {
				b.Fatal(err)
			}
			handlers = append([]any{mw}, handlers...)
		}
		app.Get("/", handlers[0], handlers[1:]...)
		serveFast(b, app.Handler(), want)
	}},
}

// std is the run of a net/http middleware that limit puts in front of next.
func std(limit func(b *testing.B, p *core.Policy, next http.Handler) http.Handler) func(b *testing.B, p *core.Policy, want int) {
	return func(b *testing.B, p *core.Policy, want int) {
		h := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
		switch p {
		case nil:
		case noop:
			next := h
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next.ServeHTTP(w, r) })
		default:
			h = limit(b, p, h)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /{$}", h)
		serveStd(b, mux, want)
	}
}

// serveStd times h on one reused request and writer, checking the status.
func serveStd(b *testing.B, h http.Handler, want int) {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "198.51.100.7:52000"
	w := &writer{h: http.Header{}}
	h.ServeHTTP(w, req) // spends the deny path's window; warms pools
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clear(w.h)
		w.code = 200
		h.ServeHTTP(w, req)
	}
	if w.code != want {
		b.Fatalf("status %d, want %d", w.code, want)
	}
}

// serveFast times a fasthttp handler on one reused request context,
// checking the status.
func serveFast(b *testing.B, handler fasthttp.RequestHandler, want int) {
	var req fasthttp.Request
	req.Header.SetMethod(fasthttp.MethodGet)
	req.SetRequestURI("/")
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(198, 51, 100, 7), Port: 52000}, nil)
	handler(&ctx) // spends the deny path's window; warms pools
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ctx.Response.Reset()
		handler(&ctx)
	}
	if got := ctx.Response.StatusCode(); got != want {
		b.Fatalf("status %d, want %d", got, want)
	}
}

// writer is a reusable http.ResponseWriter.
type writer struct {
	h    http.Header
	code int
}

func (w *writer) Header() http.Header         { return w.h }
func (w *writer) Write(p []byte) (int, error) { return len(p), nil }
func (w *writer) WriteHeader(code int)        { w.code = code }

func config(b *testing.B, p *core.Policy) admit.Config {
	s, err := memory.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	l, err := core.NewLimiter(s)
	if err != nil {
		b.Fatal(err)
	}
	return admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: p, Key: admit.ClientIP()}}}
}
