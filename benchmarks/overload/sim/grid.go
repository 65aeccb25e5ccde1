package sim

import "time"

// Shape is one backend of the grid: C workers, a mean service time S.
type Shape struct {
	Workers int
	Service time.Duration
	Warmup  time.Duration // before measuring (0: 10s)
}

// Grid is issue 19's grid of backends: C = 8, 32, 100 and 400 workers, S =
// 5, 20 and 50ms. The adaptive limits meet every one from the same
// defaults, never told C.
func Grid() []Shape {
	var g []Shape
	for _, c := range []int{8, 32, 100, 400} {
		for _, s := range []time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond} {
			g = append(g, Shape{Workers: c, Service: s})
		}
	}
	return g
}

// GridLoads are the loads the grid runs at: half, all and four times the
// capacity.
var GridLoads = []float64{0.5, 1, 4}

// Config returns the run of the shape at the given load: σ 0.5 (a tail
// heavier than Default's), clients that give up after a second, span
// measured after the warm-up.
func (sh Shape) Config(load float64, span time.Duration) Config {
	warmup := sh.Warmup
	if warmup == 0 {
		warmup = 10 * time.Second
	}
	return Config{Workers: sh.Workers, Service: sh.Service, Spread: 0.5, Load: load,
		Timeout: time.Second, Warmup: warmup, Span: span, Seed: 1}
}

// Cell is one contender's run of one shape at one load, with the figures
// the grid's goals are stated in.
type Cell struct {
	Result
	ShedShare float64 // shed, as a share of the arrivals
	// VsStatic is the goodput as a share of the static limit's (at the
	// true C) on the same shape and load.
	VsStatic float64
	// VsUnloaded is the p99 as a multiple of the unloaded p99 (0.5x, no
	// limiter).
	VsUnloaded float64
}

// RunShape runs shape sh at load with each limiting contender (static at
// the true C, AIMD, Gradient), and the references their figures are
// relative to.
func RunShape(sh Shape, load float64, span time.Duration) ([]Cell, error) {
	unloaded, err := Run(sh.Config(0.5, span), Contender{Name: "none"})
	if err != nil {
		return nil, err
	}
	cfg := sh.Config(load, span)
	var cells []Cell
	for _, c := range Contenders(cfg)[1:] {
		r, err := Run(cfg, c)
		if err != nil {
			return nil, err
		}
		cells = append(cells, Cell{
			Result:     r,
			ShedShare:  float64(r.Shed) / float64(max(r.Arrived, 1)),
			VsUnloaded: float64(r.P99) / float64(unloaded.P99),
		})
	}
	for i := range cells {
		cells[i].VsStatic = cells[i].Goodput / cells[0].Goodput
	}
	return cells, nil
}

// Meets reports whether c meets the grid's goal at load: nothing shed at
// 0.5x, 95% of the capacity at 1x, and at 4x 95% of the static limit's
// goodput with a p99 at most twice the unloaded one.
func (c Cell) Meets(load float64) bool {
	switch {
	case load <= 0.5:
		return c.Shed == 0
	case load <= 1:
		return c.Goodput >= 0.95
	}
	return c.VsStatic >= 0.95 && c.VsUnloaded <= 2
}
