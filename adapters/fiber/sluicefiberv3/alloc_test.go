//go:build !race

// The race detector makes sync.Pool drop items at random, so these counts
// hold only without it.

package sluicefiberv3_test

import (
	"net"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/fiber/sluicefiberv3"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// A request from a trusted proxy allocates no more than one from the client
// itself: reading the forwarded header's lines costs nothing per request.
func TestTrustedProxyAllocations(t *testing.T) {
	direct := allocsPerRequest(t, "198.51.100.7", nil)
	for _, h := range []string{"X-Forwarded-For", "Forwarded", "X-Real-IP"} {
		if got := allocsPerRequest(t, "10.0.0.1", &h); got > direct {
			t.Errorf("proxy header %s: %v allocations per request, the client's own %v", h, got, direct)
		}
	}
}

// allocsPerRequest counts the allocations of one allowed request from peer,
// forwarded through the trusted proxy 10.0.0.1 with header ph if not nil.
func allocsPerRequest(t *testing.T, peer string, ph *string) float64 {
	t.Helper()
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	l, err := core.NewLimiter(s)
	if err != nil {
		t.Fatal(err)
	}
	cfg := admit.Config{
		Limiter: l,
		Rules: []admit.Rule{{Policy: core.MustPolicy(core.PolicyConfig{
			Name: "per-ip", Algorithm: core.TokenBucket, Quota: 1_000_000, Period: time.Second, Burst: 1 << 40,
		}), Key: admit.ClientIP()}},
	}
	var req fasthttp.Request
	req.Header.SetMethod(fasthttp.MethodGet)
	req.SetRequestURI("/")
	if ph != nil {
		cfg.TrustedProxies, cfg.ProxyHeader = []string{"10.0.0.1"}, *ph
		req.Header.Add("X-Forwarded-For", "198.51.100.7")
		req.Header.Add("Forwarded", "for=198.51.100.7")
		req.Header.Add("X-Real-IP", "198.51.100.7")
	}
	mw, err := sluicefiberv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New()
	app.Get("/", mw, func(fiber.Ctx) error { return nil })
	handler := app.Handler()
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.ParseIP(peer), Port: 4000}, nil)
	return testing.AllocsPerRun(100, func() {
		ctx.Response.Reset()
		handler(&ctx)
		if ctx.Response.StatusCode() != fiber.StatusOK {
			t.Fatalf("status %d", ctx.Response.StatusCode())
		}
	})
}

// Views are pooled: an allowed request allocates one object, the copy of
// its key that httplimit keeps (as with Fiber v2's adapter), and none for
// the view fiber.Ctx, an interface, would otherwise need.
func TestAllowedAllocations(t *testing.T) {
	if got := allocsPerRequest(t, "198.51.100.7", nil); got > 1 {
		t.Errorf("%v allocations per allowed request, want at most 1", got)
	}
}
