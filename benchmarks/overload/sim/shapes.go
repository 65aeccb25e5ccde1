package sim

import (
	"fmt"
	"time"
)

// Case is one shape of service the adaptive limits are judged on: a run,
// and the goal it is held to.
type Case struct {
	Name string
	Config
	// Unloaded is the reference run whose p99 the goal's p99 is a
	// multiple of: the backend at its slowest (its longest service time,
	// its fewest workers) throughout, at 0.5x, with no limiter.
	Unloaded Config
}

// Shapes returns issue 28's shapes, then those this package adds where an
// adaptive limit is weakest, each measured after a warm-up, at seed seed.
// Each backend has C workers with log-normal service times of σ 0.5 unless
// it says otherwise, and clients that give up after a second.
func Shapes(seed uint64) []Case {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	base := func(workers int, service time.Duration, load float64) Config {
		return Config{Workers: workers, Service: service, Spread: 0.5, Load: load,
			Timeout: time.Second, Warmup: sec(10), Span: sec(30), Seed: seed}
	}
	var cs []Case
	add := func(name string, cfg Config) {
		// The reference is the backend at its slowest, all run long.
		ref := cfg
		ref.Load, ref.Changes = 0.5, nil
		for _, ch := range cfg.Changes {
			if ch.Workers > 0 {
				ref.Workers = min(ref.Workers, ch.Workers)
			}
			ref.Service = max(ref.Service, ch.Service)
		}
		cs = append(cs, Case{Name: name, Config: cfg, Unloaded: ref})
	}

	// Issue 28's shapes.
	c := base(32, ms(20), 2)
	c.Warmup, c.Span = sec(4), sec(10)
	c.Changes = []Change{{At: sec(6), Service: ms(40)}}
	add("S doubles at 2x, 10 s", c)
	c = base(32, ms(20), 2)
	c.Span = sec(60)
	c.Changes = []Change{{At: sec(12), Service: ms(40)}}
	add("S doubles at 2x, 60 s", c)
	add("C=100, 0.5x", base(100, ms(50), 0.5))
	add("C=100, S=400 ms, 4x", base(100, ms(400), 4))
	add("C=8, 4x", base(8, ms(50), 4))
	c = base(32, 0, 3)
	c.Routes = []Route{{Share: 0.5, Service: ms(5)}, {Share: 0.5, Service: ms(200)}}
	add("two routes, 5 and 200 ms, 3x", c)
	c = base(32, ms(20), 3)
	c.Pareto = 1.5
	add("Pareto α 1.5, 3x", c)
	c = base(32, ms(20), 1)
	c.Changes = append(Ramp(sec(10), sec(1), 10, func(f float64) Change { return Change{Load: 1 + 5*f} }),
		Change{At: sec(21), Load: 1})
	add("load steps 1x → 6x in 1 s, for 10 s", c)
	c = base(32, ms(20), 2)
	c.Span = sec(50)
	c.Changes = append(Ramp(sec(10), sec(20), 20, func(f float64) Change { return Change{Service: ms(20 + int(60*f))} }),
		Ramp(sec(30), sec(20), 20, func(f float64) Change { return Change{Service: ms(80 - int(60*f))} })...)
	add("S rises 4x over 20 s, then back, 2x", c)
	c = base(32, ms(20), 2)
	c.Hang = 0.3
	add("30% hang for the timeout, 2x", c)
	c = base(32, ms(20), 0.5)
	c.Hang = 0.3
	add("30% hang for the timeout, 0.5x", c)

	// This package's: where an adaptive limit is weakest.
	add("C=1, 4x", base(1, ms(50), 4))
	add("C=2, S=200 ms, 3x", base(2, ms(200), 3))
	add("C=400, S=5 ms, 4x", base(400, ms(5), 4))
	add("C=400, 0.5x", base(400, ms(20), 0.5))
	c = base(32, ms(20), 3)
	c.Spread = 1.5
	add("log-normal σ 1.5, 3x", c)
	c = base(32, ms(20), 0.3)
	c.Span = sec(40)
	for i := range 10 {
		c.Changes = append(c.Changes, Change{At: sec(10 + 4*i), Load: 3}, Change{At: sec(12 + 4*i), Load: 0.3})
	}
	add("bursts: 0.3x and 3x, 2 s each", c)
	c = base(64, ms(20), 2)
	c.Span = sec(40)
	c.Changes = []Change{{At: sec(20), Workers: 16}, {At: sec(35), Workers: 64}}
	add("C falls 4x and comes back, 2x", c)
	c = base(32, ms(20), 1.2)
	c.Span = sec(40)
	c.Changes = []Change{{At: sec(15), Service: ms(5)}}
	add("S falls 4x at 1.2x", c)
	c = base(16, ms(20), 3)
	c.Routes = []Route{{Share: 0.9, Service: ms(2)}, {Share: 0.1, Service: ms(500)}}
	add("90% at 2 ms, 10% at 500 ms, 3x", c)
	return cs
}

// Ramp returns steps changes spread evenly over `over` from `at`, the i-th
// (from 1) made by f(i/steps) and set at its time.
func Ramp(at, over time.Duration, steps int, f func(float64) Change) []Change {
	chs := make([]Change, steps)
	for i := range chs {
		frac := float64(i+1) / float64(steps)
		chs[i] = f(frac)
		chs[i].At = at + time.Duration(frac*float64(over))
	}
	return chs
}

// Verdict is one contender's run of a Case, with the figures the goal is
// stated in.
type Verdict struct {
	Result
	ShedShare  float64 // shed, as a share of the arrivals
	VsStatic   float64 // goodput, as a share of the static limit's at the true C
	VsUnloaded float64 // p99, as a multiple of the unloaded p99
}

// Meets reports whether v meets issue 28's goal for a run at offered load
// (its highest): at most 0.5x, nothing shed; above it, goodput at least
// 0.95x the static limit's, and a p99 at most twice the unloaded one.
func (v Verdict) Meets(load float64) bool {
	if load <= 0.5 {
		return v.Shed == 0
	}
	return v.VsStatic >= 0.95 && v.VsUnloaded <= 2
}

// PeakLoad returns the highest load cfg offers.
func PeakLoad(cfg Config) float64 {
	peak := cfg.Load
	for _, ch := range cfg.Changes {
		peak = max(peak, ch.Load)
	}
	return peak
}

// RunCase runs c with the static limit at the true C and with each of the
// contenders, and returns their verdicts, the static limit's first.
func RunCase(c Case, contenders ...Contender) ([]Verdict, error) {
	unloaded, err := Run(c.Unloaded, Contender{Name: "none"})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	all := append([]Contender{Contenders(c.Config)[1]}, contenders...)
	vs := make([]Verdict, len(all))
	for i, k := range all {
		r, err := Run(c.Config, k)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		vs[i] = Verdict{Result: r, ShedShare: float64(r.Shed) / float64(max(r.Arrived, 1)),
			VsUnloaded: float64(r.P99) / float64(max(unloaded.P99, 1))}
	}
	for i := range vs {
		vs[i].VsStatic = float64(vs[i].Good) / float64(max(vs[0].Good, 1))
	}
	return vs, nil
}
