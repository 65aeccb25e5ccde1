// Command overload prints the overload simulation's table: goodput and
// latency with no limiter, a static limit at the true capacity, AIMD and
// Gradient, at 0.5x to 4x the capacity, then a run in which the capacity
// halves and later doubles back. With -svg it writes a chart of the limit
// over time through that run. With -grid it prints issue 19's tables
// instead: the service time doubling mid-run, and every backend of C = 8,
// 32, 100, 400 workers at S = 5, 20, 50ms at 0.5x, 1x and 4x. With -http
// it runs the same shapes over real loopback HTTP (open-loop Poisson
// arrivals, a backend of C goroutines whose abandoned work is still done),
// as far as the machine drives them; each run lasts -http-warmup +
// -http-span (plus up to the client timeout). With -http-cases it runs the
// cases of -shapes over real loopback HTTP (-http-seeds, -http-only; each
// case's own warm-up and span unless -http-warmup or -http-span is set),
// a case whose peak arrival rate passes -http-max-rate with its workers
// divided by the smallest integer that brings it under (skipped if fewer
// than 4 would be left). The p99 of the real-HTTP tables is measured as
// sim measures it, on the server, from arrival to the end of the work.
//
//	go run ./overload -svg limit.svg
//	go run ./overload -grid
//	go run ./overload -http
//	go run ./overload -http-cases -http-seeds 1
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/sluice-go/sluice/benchmarks/overload/sim"
)

func main() {
	cfg := sim.Default()
	flag.IntVar(&cfg.Workers, "workers", cfg.Workers, "backend concurrency C")
	flag.DurationVar(&cfg.Service, "service", cfg.Service, "mean service time S")
	flag.Float64Var(&cfg.Spread, "spread", cfg.Spread, "σ of the log-normal service time")
	flag.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "client timeout")
	flag.DurationVar(&cfg.Span, "span", cfg.Span, "measured time")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	svg := flag.String("svg", "", "write the chart of the capacity-change run to this file")
	grid := flag.Bool("grid", false, "print issue 19's grid (C × S × load) and service-time-change tables instead")
	gridSpan := flag.Duration("grid-span", 20*time.Second, "measured time of each grid run")
	shapes := flag.Bool("shapes", false, "print issue 28's shapes, seeds 1 and 2, instead")
	web := flag.Bool("http", false, "run the real-HTTP benchmark (127.0.0.1) instead")
	var hf httpFlags
	flag.StringVar(&hf.shapes, "http-shapes", "8x50ms,8x20ms,32x50ms,100x50ms", "backends of the real-HTTP grid, CxS")
	flag.StringVar(&hf.loads, "http-loads", "0.5,1,4", "loads of the real-HTTP grid")
	flag.Float64Var(&hf.maxRate, "http-max-rate", 2000, "skip real-HTTP grid runs above this many arrivals per second; scale -http-cases cases down to it")
	flag.IntVar(&hf.workers, "http-doubling-workers", 8, "C of the real-HTTP service-time doubling (its load is 2x C/20ms)")
	flag.DurationVar(&hf.warmup, "http-warmup", 4*time.Second, "warm-up of each real-HTTP run")
	flag.DurationVar(&hf.span, "http-span", 8*time.Second, "measured time of each real-HTTP run")
	cases := flag.Bool("http-cases", false, "run sim.Shapes' cases over real HTTP (127.0.0.1) instead")
	var cf casesFlags
	flag.StringVar(&cf.seeds, "http-seeds", "1,2", "seeds of the -http-cases runs")
	flag.StringVar(&cf.only, "http-only", "", "run only the -http-cases cases whose names match this regexp")
	flag.Parse()
	if *cases {
		// -http-warmup and -http-span override each case's own only when set.
		flag.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "http-warmup":
				cf.warmup = hf.warmup
			case "http-span":
				cf.span = hf.span
			}
		})
		cf.maxRate = hf.maxRate
		if err := printHTTPCases(cf, os.Args[1:]); err != nil {
			log.Fatal(err)
		}
		return
	}
	if *shapes {
		if err := printShapes([]uint64{1, 2}); err != nil {
			log.Fatal(err)
		}
		return
	}
	if done, err := alternate(*web, *grid, hf, *gridSpan); done {
		if err != nil {
			log.Fatal(err)
		}
		return
	}

	unloaded := cfg
	unloaded.Load = 0.5
	base, err := sim.Run(unloaded, sim.Contender{Name: "none"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("backend: C=%d workers, S=%v mean (log-normal σ=%.2g), capacity %.0f/s; client timeout %v; %v measured after %v; seed %d\n",
		cfg.Workers, cfg.Service, cfg.Spread, float64(cfg.Workers)/cfg.Service.Seconds(), cfg.Timeout, cfg.Span, cfg.Warmup, cfg.Seed)
	fmt.Printf("unloaded p99 (0.5x, no limiter): %v\n\n", ms(base.P99))

	fmt.Println("| load | contender | goodput | shed | p50 | p99 | p99 / unloaded p99 |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, load := range []float64{0.5, 1, 2, 4} {
		c := cfg
		c.Load = load
		for _, k := range sim.Contenders(c) {
			r, err := sim.Run(c, k)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("| %gx | %s | %.1f%% | %.1f%% | %s | %s | %.2f |\n", load, k.Name, 100*r.Goodput,
				100*float64(r.Shed)/float64(max(r.Arrived, 1)), ms(r.P50), ms(r.P99), float64(r.P99)/float64(base.P99))
		}
	}

	ch := sim.CapacityChange(cfg)
	fmt.Printf("\ncapacity change: %gx the starting capacity; C=%d, then %d at %v, then %d at %v\n\n",
		ch.Load, ch.Workers, ch.Changes[0].Workers, ch.Changes[0].At, ch.Changes[1].Workers, ch.Changes[1].At)
	fmt.Println("| contender | goodput: C / C/2 / C again | p50 / p99 at C/2 | p50 / p99 at C again | limit settled after halving / doubling |")
	fmt.Println("|---|---|---|---|---|")
	var runs []sim.Result
	for _, k := range append(sim.Contenders(ch), sim.StaticHalf(ch)) {
		r, err := sim.Run(ch, k)
		if err != nil {
			log.Fatal(err)
		}
		runs = append(runs, r)
		ps := sim.Phases(ch, r)[:3]
		settledCol := fmt.Sprintf("%s / %s", settled(ps[1].Settled), settled(ps[2].Settled))
		if k.New == nil || k.Name == "static" || k.Name == "static C/2" {
			settledCol = "(fixed)"
		}
		fmt.Printf("| %s | %.1f%% / %.1f%% / %.1f%% | %s / %s | %s / %s | %s |\n", k.Name,
			100*ps[0].Goodput, 100*ps[1].Goodput, 100*ps[2].Goodput,
			ms(ps[1].P50), ms(ps[1].P99), ms(ps[2].P50), ms(ps[2].P99), settledCol)
	}
	if *svg != "" {
		if err := os.WriteFile(*svg, sim.Chart(ch, runs), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("\nwrote %s\n", *svg)
	}
}

// alternate prints the -http or the -grid tables, if asked for.
func alternate(web, grid bool, hf httpFlags, span time.Duration) (bool, error) {
	switch {
	case web:
		return true, printHTTP(hf)
	case grid:
		return true, printGrid(span)
	}
	return false, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func settled(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
