package main

import (
	"fmt"
	"time"

	"github.com/sluice-go/sluice/benchmarks/overload/sim"
)

// printGrid prints issue 19's tables: the service-time doubling, then every
// shape of the grid at every load, with whether each contender meets the
// goal.
func printGrid(span time.Duration) error {
	if err := printServiceChange(); err != nil {
		return err
	}
	fmt.Printf("\ngrid: σ 0.5, client timeout 1 s, %v measured after 10 s; goal: 0.5x nothing shed, 1x ≥ 95%% of capacity, 4x ≥ 95%% of static's goodput and p99 ≤ 2x unloaded\n\n", span)
	fmt.Println("| C | S | load | static goodput / p99 | aimd goodput / shed / vs static / p99 ratio / limit | gradient goodput / shed / vs static / p99 ratio / limit |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, sh := range sim.Grid() {
		for _, load := range sim.GridLoads {
			cells, err := sim.RunShape(sh, load, span)
			if err != nil {
				return err
			}
			fmt.Printf("| %d | %v | %gx | %.1f%% / %s |", sh.Workers, sh.Service, load, 100*cells[0].Goodput, ms(cells[0].P99))
			for _, c := range cells[1:] {
				mark := "ok"
				if !c.Meets(load) {
					mark = "**miss**"
				}
				fmt.Printf(" %.1f%% / %.1f%% / %.2f / %.2f / %d %s |", 100*c.Goodput, 100*c.ShedShare, c.VsStatic, c.VsUnloaded, c.FinalLimit, mark)
			}
			fmt.Println()
		}
	}
	return nil
}

// printServiceChange prints the run in which the service time doubles.
func printServiceChange() error {
	cfg := sim.ServiceChange()
	after := cfg
	after.Service, after.Changes, after.Load = cfg.Changes[0].Service, nil, 0.5
	unloaded, err := sim.Run(after, sim.Contender{Name: "none"})
	if err != nil {
		return err
	}
	fmt.Printf("service time doubles: C=%d, S %v → %v at %v, %gx the first capacity, σ %.1f, measured %v–%v; new unloaded p99 %s\n\n",
		cfg.Workers, cfg.Service, cfg.Changes[0].Service, cfg.Changes[0].At, cfg.Load, cfg.Spread, cfg.Warmup, cfg.Warmup+cfg.Span, ms(unloaded.P99))
	fmt.Println("| contender | goodput /s (window) | vs static | p99 (window) | p99 / new unloaded | limit settled after the change | final limit |")
	fmt.Println("|---|---|---|---|---|---|---|")
	var static float64
	for _, k := range append(sim.Contenders(cfg)[1:], sim.OldAIMD(cfg)) {
		r, err := sim.Run(cfg, k)
		if err != nil {
			return err
		}
		rate := float64(r.Good) / cfg.Span.Seconds()
		if k.Name == "static" {
			static = rate
		}
		ps := sim.Phases(cfg, r)
		fmt.Printf("| %s | %.0f | %.1f%% | %s | %.2f | %s | %d |\n", k.Name, rate, 100*rate/static, ms(r.P99),
			float64(r.P99)/float64(unloaded.P99), settled(ps[len(ps)-1].Settled), r.FinalLimit)
	}
	return nil
}

// printShapes prints issue 28's shapes and this package's, at each seed:
// for every contender, goodput against the static limit at the true C, the
// share shed, and p99 against the unloaded p99, with whether it meets the
// goal.
func printShapes(seeds []uint64) error {
	fmt.Println("goal: above 0.5x, goodput ≥ 0.95x the static limit at the true C and p99 ≤ 2x the unloaded p99; at 0.5x, nothing shed")
	fmt.Println("cells: goodput vs static / shed / p99 vs unloaded; a miss in bold")
	fmt.Println()
	fmt.Println("| shape | seed | static: goodput of capacity / p99 | aimd | aimd with a 3×S ceiling | gradient |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, seed := range seeds {
		for _, c := range sim.Shapes(seed) {
			vs, err := sim.RunCase(c, sim.Contenders(c.Config)[2], sim.OldAIMD(c.Config), sim.Contenders(c.Config)[3])
			if err != nil {
				return err
			}
			fmt.Println(verdictRow(c, seed, vs))
		}
	}
	return nil
}

// verdictRow renders a case's verdicts, the static limit's first, as a
// row of the shapes' tables: the static limit's goodput and p99, then each
// contender's goodput against it, share shed and p99 against the unloaded
// one, a miss in bold.
func verdictRow(c sim.Case, seed uint64, vs []sim.Verdict) string {
	row := fmt.Sprintf("| %s | %d | %.1f%% / %s |", c.Name, seed, 100*vs[0].Goodput, ms(vs[0].P99))
	for _, v := range vs[1:] {
		cell := fmt.Sprintf("%.2fx / %.1f%% / %.2fx", v.VsStatic, 100*v.ShedShare, v.VsUnloaded)
		if !v.Meets(sim.PeakLoad(c.Config)) {
			cell = "**" + cell + "**"
		}
		row += " " + cell + " |"
	}
	return row
}
