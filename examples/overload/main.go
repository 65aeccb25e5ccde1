// Command overload runs a service behind sluice's net/http middleware, and
// overloads it: one command shows what a rate limit and a concurrency limit
// do together when traffic exceeds what the service can serve.
//
// The service is a simulated backend: Workers requests at a time, each
// taking Service (10 × 50ms by default, 200 requests a second), the rest
// waiting for a worker, as a real service's threads, connection pool or
// database do. In front of it, one admit.Config holds:
//
//   - a rate limit per client IP (10 a second), which refuses an abusive
//     client with 429 before its requests take anything else;
//   - an adaptive concurrency limit (backpressure.Gradient), which finds how
//     many requests the backend serves at once without queueing, and sheds
//     the excess with 503 and Retry-After, sheddable requests first,
//     critical ones last (the X-Priority header: critical, sheddable, or
//     neither for the default class).
//
// Both report to one observer. By default the command also drives the
// service, open-loop, from 200 simulated clients behind a trusted proxy
// (X-Forwarded-For) and one abusive client: at half its capacity, then at
// four times, then at its full capacity once half the workers are gone. It
// prints a line a second: requests offered, answered 200, 429, and 503 by
// class, the concurrency limit, and the median and 99th percentile of the
// 200s' latency.
//
//	go run ./examples/overload                    # serve and overload, 5s a phase
//	go run ./examples/overload -phase 10s -workers 20
//	go run ./examples/overload -serve             # the server alone, on :8080, for hey or curl
//
// With -serve, the line a second shows what the server answered. Requests
// from one machine share one client IP, which the rate limit then holds to
// 10 a second: -per-ip 0 leaves it out, to overload the concurrency limit
// from one client.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/examples/internal/demo"
	"github.com/sluice-go/sluice/store/memory"
)

func main() {
	cfg := defaultConfig()
	serveOnly := flag.Bool("serve", false, "run the server alone, without the load")
	addr := flag.String("addr", "", `address to listen on (default ":8080" with -serve, a free local port otherwise)`)
	flag.IntVar(&cfg.Workers, "workers", cfg.Workers, "the backend's workers: requests served at once")
	flag.DurationVar(&cfg.Service, "service", cfg.Service, "the time a worker takes per request")
	flag.DurationVar(&cfg.Phase, "phase", cfg.Phase, "the length of each phase of the load")
	flag.IntVar(&cfg.PerIP, "per-ip", cfg.PerIP, "the rate limit per client IP, requests a second (0: none)")
	flag.Parse()
	if *addr == "" {
		*addr = "127.0.0.1:0"
		if *serveOnly {
			*addr = ":8080"
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	if *serveOnly {
		log.Printf("listening on %s: %d workers × %v = %.0f requests/s; X-Priority: critical or sheddable",
			ln.Addr(), cfg.Workers, cfg.Service, cfg.capacity())
		err = serve(ctx, ln, cfg, os.Stdout)
	} else {
		_, err = run(ctx, ln, cfg, os.Stdout)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// Config sets up one run.
type Config struct {
	Workers int           // the backend's workers at the start
	Service time.Duration // the time a worker takes per request
	Phase   time.Duration // the length of each phase of the load
	PerIP   int           // the rate limit per client IP, requests a second (0: none)
	Queue   int           // the concurrency limit's queue
	MaxWait time.Duration // the longest a request waits in it
	Clients int           // simulated clients, besides the abusive one
	Abuser  float64       // the abusive client's requests a second
	Timeout time.Duration // the time a client waits for an answer
	Seed    uint64        // the load's random source
}

func defaultConfig() Config {
	return Config{Workers: 10, Service: 50 * time.Millisecond, Phase: 5 * time.Second,
		PerIP: 10, Queue: 10, MaxWait: 200 * time.Millisecond, Clients: 200, Abuser: 30, Timeout: 10 * time.Second, Seed: 1}
}

// capacity is the requests a second the backend serves with all its
// workers.
func (c Config) capacity() float64 { return float64(c.Workers) / c.Service.Seconds() }

// service is the backend behind the middleware, with what the line a
// second reports.
type service struct {
	handler http.Handler
	backend *backend
	slots   *backpressure.Limiter
	stats   *stats
	store   *memory.Store // the rate limit's, to close
}

// newService builds the backend behind one admit.Config: the rate
// limit, then the concurrency limit, both reporting to one observer. Its
// store is closed when it fails; otherwise the caller closes it.
func newService(cfg Config) (*service, error) {
	st := newStats()
	// The gradient is not told the backend's capacity; it measures the
	// latency of an idle backend at Min requests at once, which must be
	// below the capacity, and finds the rest.
	gradient, err := backpressure.NewGradient(backpressure.GradientConfig{Min: max(cfg.Workers/2, 1)})
	if err != nil {
		return nil, err
	}
	slots, err := backpressure.New(backpressure.Config{
		Controller: gradient,
		Queue:      cfg.Queue,
		MaxWait:    cfg.MaxWait,
		Headroom:   backpressure.Headroom{Critical: 0.2, Default: 0.2},
		Name:       "backend", Observer: st.observe,
	})
	if err != nil {
		return nil, err
	}
	store, err := memory.New()
	if err != nil {
		return nil, err
	}
	limiter, err := core.NewLimiter(store, core.WithObserver(st.observe))
	if err == nil {
		var rules []admit.Rule
		if cfg.PerIP > 0 {
			rules = []admit.Rule{{Policy: core.PerSecond(int64(cfg.PerIP)), Key: admit.ClientIP()}}
		}
		var limit func(http.Handler) http.Handler
		limit, err = sluicehttp.New(admit.Config{
			Limiter:        limiter,
			Rules:          rules,
			TrustedProxies: []string{"127.0.0.1", "::1"}, // the load generator
			Concurrency:    slots,
			Class:          classOf,
		})
		if err == nil {
			b := newBackend(cfg.Workers, cfg.Service)
			return &service{handler: st.count(limit(b)), backend: b, slots: slots, stats: st, store: store}, nil
		}
	}
	store.Close()
	return nil, err
}

// classOf is a request's class: the X-Priority header says critical or
// sheddable; anything else is default.
func classOf(r *admit.Request) core.Class {
	switch r.Header("X-Priority") {
	case "critical":
		return core.Critical
	case "sheddable":
		return core.Sheddable
	}
	return core.Default
}

// serve serves the service on ln until ctx is done, with a line a second of
// what it answered, written to out.
func serve(ctx context.Context, ln net.Listener, cfg Config, out io.Writer) error {
	svc, err := newService(cfg)
	if err != nil {
		return err
	}
	defer svc.store.Close()
	stop := svc.report(out, func(int) string { return "serve" }, true)
	defer stop()
	return demo.Serve(ctx, ln, svc.handler)
}

// run serves the service on ln and drives it through the phases, writing a
// line a second to out, and returns the whole run's counts once every
// request has been answered.
func run(ctx context.Context, ln net.Listener, cfg Config, out io.Writer) (Totals, error) {
	svc, err := newService(cfg)
	if err != nil {
		return Totals{}, err
	}
	defer svc.store.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- demo.Serve(ctx, ln, svc.handler) }()

	phases := []phase{
		{name: "0.5x", load: 0.5},
		{name: "4x", load: 4},
		{name: "halved", load: 1, halve: true},
	}
	fmt.Fprintf(out, "%d workers × %v = %.0f requests/s; %v a phase: %s; and %.0f/s from one abusive client; per-IP limit %d/s\n",
		cfg.Workers, cfg.Service, cfg.capacity(), cfg.Phase, describe(phases, cfg), cfg.Abuser, cfg.PerIP)
	gen := newLoad(cfg, "http://"+ln.Addr().String()+"/")
	// Second n runs from n-1 to n seconds after the load starts, and
	// belongs to the phase its middle falls in.
	stop := svc.report(out, func(n int) string {
		middle := time.Duration(n)*time.Second - time.Second/2
		return phases[min(int(middle/cfg.Phase), len(phases)-1)].name
	}, false)
	for _, p := range phases {
		if p.halve {
			svc.backend.halve()
		}
		gen.drive(ctx, p.load*cfg.capacity(), cfg.Phase)
	}
	gen.wait()
	stop()
	totals := svc.stats.totals()
	totals.InFlight, totals.Waiting = svc.slots.InFlight(), svc.slots.Waiting()
	fmt.Fprintln(out, totals)
	cancel()
	return totals, <-served
}

// phase is a stretch of the load: a multiple of the starting capacity,
// offered after the backend lost half its workers if halve is set.
type phase struct {
	name  string
	load  float64
	halve bool
}

func describe(ps []phase, cfg Config) string {
	s := ""
	for i, p := range ps {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s (%.0f/s", p.name, p.load*cfg.capacity())
		if p.halve {
			s += fmt.Sprintf(", %d workers", cfg.Workers-cfg.Workers/2)
		}
		s += ")"
	}
	return s
}

// report writes a line a second to out until the returned function is
// called, naming the phase of second n (from 1) phase(n) says. With quiet,
// seconds that saw no request write nothing.
func (s *service) report(out io.Writer, phase func(n int) string, quiet bool) (stop func()) {
	fmt.Fprintln(out, header)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			sec := s.stats.second()
			if !quiet || sec.Offered > 0 {
				fmt.Fprintln(out, sec.line(n, phase(n), s.slots.Limit(), s.slots.InFlight()))
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
