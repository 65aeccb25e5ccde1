package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/benchmarks/overload/sim"
	"github.com/sluice-go/sluice/core"
)

// httpFlags configure the real-HTTP benchmark.
type httpFlags struct {
	shapes  string        // C×S shapes, "8x50ms,32x20ms"
	loads   string        // "0.5,1,4"
	maxRate float64       // arrivals per second past which a run is skipped
	workers int           // C of the service-time doubling (sim.ServiceChange's: 32)
	warmup  time.Duration // per run
	span    time.Duration // per run
}

// printHTTP prints the real-HTTP tables: the service-time doubling, then
// the grid's shapes that two cores can drive.
func printHTTP(f httpFlags) error {
	if err := printHTTPServiceChange(f.workers); err != nil {
		return err
	}
	shapes, err := parseShapes(f.shapes)
	if err != nil {
		return err
	}
	var loads []float64
	for _, s := range strings.Split(f.loads, ",") {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("-http-loads: %w", err)
		}
		loads = append(loads, v)
	}
	fmt.Printf("\nreal HTTP, loopback: σ 0.5, client timeout 1 s, %v measured after %v; runs over %.0f arrivals/s skipped\n\n", f.span, f.warmup, f.maxRate)
	fmt.Println("| C | S | load | contender | goodput (of capacity) | shed | vs static | p99 | p99 / unloaded | final limit |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, sh := range shapes {
		base := sim.Config{Workers: sh.Workers, Service: sh.Service, Spread: 0.5, Warmup: f.warmup, Span: f.span, Timeout: time.Second, Seed: 1}
		unloaded := base
		unloaded.Load = 0.5
		ref, err := runHTTP(unloaded, nil)
		if err != nil {
			return err
		}
		capacity := float64(sh.Workers) / sh.Service.Seconds()
		for _, load := range loads {
			if load*capacity > f.maxRate {
				fmt.Printf("| %d | %v | %gx | (skipped: %.0f/s) | | | | | | |\n", sh.Workers, sh.Service, load, load*capacity)
				continue
			}
			r := base
			r.Load = load
			var static float64
			for _, c := range sim.Contenders(sim.Config{Workers: sh.Workers})[1:] {
				l, err := c.New(core.SystemClock{})
				if err != nil {
					return err
				}
				res, err := runHTTP(r, l)
				if err != nil {
					return err
				}
				good := res.Goodput
				if c.Name == "static" {
					static = good
				}
				fmt.Printf("| %d | %v | %gx | %s | %.1f%% | %.1f%% | %.2f | %s | %.2f | %d |\n", sh.Workers, sh.Service, load, c.Name,
					100*good, 100*float64(res.Shed)/float64(max(res.Arrived, 1)), good/static, ms(res.P99),
					float64(res.P99)/float64(ref.P99), res.FinalLimit)
			}
		}
	}
	return nil
}

// printHTTPServiceChange prints the real-HTTP run of sim.ServiceChange, with
// workers workers.
func printHTTPServiceChange(workers int) error {
	cfg := sim.ServiceChange()
	cfg.Workers = workers
	ch := cfg.Changes[0]
	unloaded := cfg
	unloaded.Service, unloaded.Changes, unloaded.Load = ch.Service, nil, 0.5
	unloaded.Warmup, unloaded.Span = time.Second, 5*time.Second
	ref, err := runHTTP(unloaded, nil)
	if err != nil {
		return err
	}
	r := cfg
	fmt.Printf("real HTTP, loopback: service time doubles: C=%d, S %v → %v at %v, %gx the first capacity, σ 0.5, measured %v–%v; new unloaded p99 %s\n\n",
		cfg.Workers, cfg.Service, ch.Service, ch.At, cfg.Load, cfg.Warmup, cfg.Warmup+cfg.Span, ms(ref.P99))
	fmt.Println("| contender | goodput /s (window) | vs static | p99 (window) | p99 / new unloaded | limit settled after the change | final limit |")
	fmt.Println("|---|---|---|---|---|---|---|")
	var static float64
	for _, c := range sim.Contenders(cfg)[1:] {
		l, err := c.New(core.SystemClock{})
		if err != nil {
			return err
		}
		res, err := runHTTP(r, l)
		if err != nil {
			return err
		}
		rate := float64(res.Good) / cfg.Span.Seconds()
		if c.Name == "static" {
			static = rate
		}
		trace := make([]sim.Point, len(res.Limits))
		for i, p := range res.Limits {
			trace[i] = sim.Point{At: p.At, Limit: p.Limit}
		}
		fmt.Printf("| %s | %.0f | %.1f%% | %s | %.2f | %s | %d |\n", c.Name, rate, 100*rate/static, ms(res.P99),
			float64(res.P99)/float64(ref.P99), settled(sim.Settled(trace, ch.At, cfg.Warmup+cfg.Span)), res.FinalLimit)
	}
	return nil
}

// parseShapes reads "8x50ms,32x20ms".
func parseShapes(s string) ([]sim.Shape, error) {
	var shapes []sim.Shape
	for _, f := range strings.Split(s, ",") {
		c, d, ok := strings.Cut(f, "x")
		if !ok {
			return nil, fmt.Errorf("-http-shapes: %q is not CxS", f)
		}
		workers, err := strconv.Atoi(c)
		if err != nil || workers < 1 {
			return nil, fmt.Errorf("-http-shapes: %q: workers must be a positive integer", f)
		}
		service, err := time.ParseDuration(d)
		if err != nil || service <= 0 {
			return nil, fmt.Errorf("-http-shapes: %q: service time must be a positive duration", f)
		}
		shapes = append(shapes, sim.Shape{Workers: workers, Service: service})
	}
	return shapes, nil
}

func percentile(ds []time.Duration, q float64) time.Duration { return sim.Percentile(ds, q) }
