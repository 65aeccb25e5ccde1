// Command otel serves the demo site behind sluice's net/http middleware
// and its metrics on /metrics, for Prometheus to scrape: the limiter
// reports every decision to sluiceotel's instruments, exported by
// OpenTelemetry's Prometheus exporter, and to a sluiceslog logger.
//
// GET / is limited per client IP to a token bucket of 10 refilled at 2 per
// second; POST /login per IP to 3 a minute as well. The whole site takes
// at most 64 requests at once, 64 more waiting up to a second (a
// concurrency limit, package backpressure, in each route's
// admit.Config, named "site" in the metrics and logs). /metrics is not
// limited. Limits live in memory.
//
//	go run ./examples/otel [-addr :8080]
package main

import (
	"context"
	"flag"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/examples/internal/demo"
	"github.com/sluice-go/sluice/observe/sluiceotel"
	"github.com/sluice-go/sluice/observe/sluiceslog"
	"github.com/sluice-go/sluice/store/memory"
)

func main() {
	addr := flag.String("addr", ":8080", "address to listen on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on %s; metrics on /metrics", ln.Addr())
	if err := serve(ctx, ln, core.SystemClock{}); err != nil {
		log.Fatal(err)
	}
}

// serve serves the site and its metrics on ln until ctx is done, then shuts
// down gracefully. The limits are kept on clock.
func serve(ctx context.Context, ln net.Listener, clock core.Clock) error {
	// The exporter registers on a registry of its own, not Prometheus's
	// global one, and keeps Prometheus's names: sluice.rate_limiting.requests
	// is scraped as sluice_rate_limiting_requests_total. Without scope info,
	// the series carry sluice's attributes alone (not otel_scope_name,
	// which names sluiceotel on every one).
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		otelprom.WithoutScopeInfo())
	if err != nil {
		return err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer provider.Shutdown(context.Background())

	metrics, err := sluiceotel.New(provider, sluiceotel.WithLimits("site"))
	if err != nil {
		return err
	}
	logs, err := sluiceslog.New(slog.Default())
	if err != nil {
		return err
	}
	store, err := memory.New(memory.WithClock(clock))
	if err != nil {
		return err
	}
	defer store.Close()
	limiter, err := core.NewLimiter(store)
	if err != nil {
		return err
	}
	concurrency, err := backpressure.New(backpressure.Config{
		Controller: backpressure.Static(64), Queue: 64, MaxWait: time.Second, Name: "site",
	})
	if err != nil {
		return err
	}
	// One observer, given once: the middlewares hand it to the limiter and
	// the concurrency limit, which have none of their own.
	site, err := newSite(limiter, concurrency, core.Observers(metrics.Observe, logs))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	mux.Handle("/", site)

	return demo.Serve(ctx, ln, mux)
}

// The site's limits, per client IP: a token bucket of 10 refilled at 2 per
// second for every request, and 3 logins a minute on top.
var (
	perIP = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	login = core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.TokenBucket, Quota: 3, Period: time.Minute, Burst: 3})
)

// newSite routes the demo's site, each pattern behind its own middleware,
// as examples/nethttp does, both sharing one concurrency limit: a request
// its rate limits allow takes a slot of it.
func newSite(limiter *core.Limiter, concurrency *backpressure.Limiter, observer core.Observer) (http.Handler, error) {
	site, err := sluicehttp.New(admit.Config{
		Observer: observer,
		Limiter:  limiter,
		Rules: []admit.Rule{
			{Policy: perIP, Key: admit.ClientIP()},
		},
		Concurrency: concurrency,
	})
	if err != nil {
		return nil, err
	}
	logins, err := sluicehttp.New(admit.Config{
		Limiter: limiter,
		Rules: []admit.Rule{
			{Policy: perIP, Key: admit.ClientIP()},
			{Policy: login, Key: admit.ClientIP()},
		},
		Concurrency: concurrency,
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", site(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello from sluice\n")
	})))
	mux.Handle("POST /login", logins(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "welcome\n")
	})))
	return mux, nil
}
