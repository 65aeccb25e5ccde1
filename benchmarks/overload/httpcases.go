package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/benchmarks/overload/sim"
	"github.com/sluice-go/sluice/core"
)

// casesFlags configure the real-HTTP run of sim.Shapes.
type casesFlags struct {
	seeds   string        // "1,2"
	only    string        // a regexp of the cases' names to run
	warmup  time.Duration // each case's warm-up (0: its own)
	span    time.Duration // each case's span (0: its own)
	maxRate float64       // peak arrivals per second past which a case is scaled down
}

// minScaledWorkers is the fewest workers a case scaled down to the machine
// may keep; below, it is skipped.
const minScaledWorkers = 4

// scaleCase returns c as the machine can drive it: if its peak arrival rate
// passes maxRate, its workers (Config.Workers, every Change's and its
// Unloaded reference's) divided by the smallest integer k that brings the
// rate to maxRate or under, S, the loads, the timeout and the rest kept,
// and its name labelled "name (C=32→16)"; false, with c, if the scaled C
// would fall below minScaledWorkers.
func scaleCase(c sim.Case, maxRate float64) (sim.Case, bool) {
	if peakRate(c.Config) <= maxRate {
		return c, true
	}
	for k := 2; c.Workers/k >= minScaledWorkers; k++ {
		cfg := scaleWorkers(c.Config, k)
		if peakRate(cfg) > maxRate {
			continue
		}
		return sim.Case{Name: fmt.Sprintf("%s (C=%d→%d)", c.Name, c.Workers, cfg.Workers), Config: cfg,
			Unloaded: scaleWorkers(c.Unloaded, k)}, true
	}
	return c, false
}

// scaleWorkers returns cfg with its workers, and every Change's, divided by
// k (at least 1).
func scaleWorkers(cfg sim.Config, k int) sim.Config {
	cfg.Workers = max(cfg.Workers/k, 1)
	if len(cfg.Changes) > 0 {
		chs := make([]sim.Change, len(cfg.Changes))
		for i, ch := range cfg.Changes {
			if ch.Workers > 0 {
				ch.Workers = max(ch.Workers/k, 1)
			}
			chs[i] = ch
		}
		cfg.Changes = chs
	}
	return cfg
}

// withSpan returns cfg measured over span after warmup (0: cfg's own),
// its Changes moved to keep their places in the warm-up and the span: a
// change 40% into cfg's span is 40% into the new one.
func withSpan(cfg sim.Config, warmup, span time.Duration) sim.Config {
	w, s := cfg.Warmup, cfg.Span
	if warmup <= 0 {
		warmup = w
	}
	if span <= 0 {
		span = s
	}
	cfg.Warmup, cfg.Span = warmup, span
	if len(cfg.Changes) == 0 || (warmup == w && span == s) {
		return cfg
	}
	chs := make([]sim.Change, len(cfg.Changes))
	for i, ch := range cfg.Changes {
		if ch.At < w {
			ch.At = time.Duration(float64(ch.At) * float64(warmup) / float64(w))
		} else {
			ch.At = warmup + time.Duration(float64(ch.At-w)*float64(span)/float64(s))
		}
		chs[i] = ch
	}
	cfg.Changes = chs
	return cfg
}

// printHTTPCases runs sim.Shapes over loopback HTTP, as printShapes runs
// them in the simulation: for each case and seed, the unloaded reference
// for its p99, then the static limit at the true C, AIMD and Gradient, with
// the same goal.
func printHTTPCases(f casesFlags, args []string) error {
	var seeds []uint64
	for _, s := range strings.Split(f.seeds, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Errorf("-http-seeds: %w", err)
		}
		seeds = append(seeds, v)
	}
	only, err := regexp.Compile(f.only)
	if err != nil {
		return fmt.Errorf("-http-only: %w", err)
	}
	fmt.Printf("real HTTP, loopback: go run ./overload %s\n", strings.Join(args, " "))
	fmt.Printf("load average at the start: %s\n", loadavg())
	fmt.Printf("each case's own warm-up and span unless overridden (-http-warmup %v, -http-span %v; 0: its own), its changes moved to keep their places; the unloaded reference's warm-up at most %v (it has no limit to learn)\n",
		f.warmup, f.span, refWarmup)
	fmt.Printf("a case over %.0f arrivals/s at its peak runs with its workers (and its changes' and its reference's) divided by the smallest k that brings it under, \"(C=32→16)\"; skipped if that leaves under %d workers\n",
		f.maxRate, minScaledWorkers)
	fmt.Println("goal: above 0.5x, goodput ≥ 0.95x the static limit at the true C and p99 ≤ 2x the unloaded p99; at 0.5x, nothing shed")
	fmt.Println("cells: goodput vs static / shed / p99 vs unloaded; a miss in bold; goodput: 200s within the client's timeout; p99 as sim has it, on the server: arrival at the handler to the end of the work, uncapped, abandoned requests included, 503s excluded")
	fmt.Println()
	fmt.Println("| shape | seed | static: goodput of capacity / p99 | aimd | gradient |")
	fmt.Println("|---|---|---|---|---|")
	var runs []string
	for _, seed := range seeds {
		for _, c := range sim.Shapes(seed) {
			if !only.MatchString(c.Name) {
				continue
			}
			c, ok := scaleCase(c, f.maxRate)
			if !ok {
				fmt.Printf("| %s | %d | skipped: %.0f/s, under %d workers scaled | | |\n", c.Name, seed, peakRate(c.Config), minScaledWorkers)
				continue
			}
			fmt.Fprintf(os.Stderr, "%s %s, seed %d\n", time.Now().Format(time.TimeOnly), c.Name, seed)
			vs, rs, err := runHTTPCase(c, f.warmup, f.span)
			if err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
			fmt.Println(verdictRow(c, seed, vs))
			for i, r := range rs {
				name := "unloaded"
				if i > 0 {
					name = vs[i-1].Contender
				}
				runs = append(runs, fmt.Sprintf("| %s | %d | %s | %d | %s | %s | %s | %d | %d | %d |", c.Name, seed, name,
					r.Arrived, ms(r.P99), ms(r.ClientP99), ms(r.Lag), r.Oversleep.Microseconds(), r.Failed, r.FinalLimit))
			}
		}
	}
	fmt.Println()
	fmt.Println("harness: each run's arrivals measured, p99 on the server (the unloaded reference's first), p99 at the client (capped at the timeout), the furthest the load fell behind its schedule, the mean time a worker held a request past its drawn service time (µs), requests failed before the timeout, final limit")
	fmt.Println()
	fmt.Println("| shape | seed | run | arrived | p99 | client p99 | max send lag | oversleep µs | failed | final limit |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		fmt.Println(r)
	}
	fmt.Printf("\nload average at the end: %s\n", loadavg())
	return nil
}

// refWarmup bounds the warm-up of a case's unloaded reference: it has no
// limit to learn, only connections to open.
const refWarmup = 2 * time.Second

// runHTTPCase runs c over HTTP: the unloaded reference, then the static
// limit at c's C, AIMD and Gradient. It returns their verdicts, the static
// limit's first, and every run's result, the reference's first.
func runHTTPCase(c sim.Case, warmup, span time.Duration) ([]sim.Verdict, []httpResult, error) {
	cfg := withSpan(c.Config, warmup, span)
	refWarm := warmup
	if refWarm <= 0 {
		refWarm = c.Unloaded.Warmup
	}
	ref, err := runHTTP(withSpan(c.Unloaded, min(refWarm, refWarmup), span), nil)
	if err != nil {
		return nil, nil, err
	}
	rs := []httpResult{ref}
	all := sim.Contenders(cfg)[1:]
	vs := make([]sim.Verdict, len(all))
	for i, k := range all {
		l, err := k.New(core.SystemClock{})
		if err != nil {
			return nil, nil, err
		}
		r, err := runHTTP(cfg, l)
		if err != nil {
			return nil, nil, err
		}
		rs = append(rs, r)
		vs[i] = sim.Verdict{
			Result: sim.Result{Contender: k.Name, Arrived: r.Arrived, Shed: r.Shed, Good: r.Good,
				Goodput: r.Goodput, P99: r.P99, FinalLimit: r.FinalLimit},
			ShedShare:  float64(r.Shed) / float64(max(r.Arrived, 1)),
			VsUnloaded: float64(r.P99) / float64(max(ref.P99, 1)),
		}
	}
	for i := range vs {
		vs[i].VsStatic = float64(vs[i].Good) / float64(max(vs[0].Good, 1))
	}
	return vs, rs, nil
}

// loadavg returns the system's load averages over 1, 5 and 15 minutes.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
