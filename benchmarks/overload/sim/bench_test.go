package sim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-go/sluice/benchmarks/overload/sim"
)

// BenchmarkOverload runs the overload simulation (package internal/sim): a
// backend of C workers behind each contender, at 0.5x to 4x its capacity,
// and through a halving and doubling of C. Each iteration is one run on
// virtual time, so the reported figures depend on the seed alone; ns/op is
// only the cost of simulating.
//
//	go test ./overload/sim -run '^$' -bench Overload
func BenchmarkOverload(b *testing.B) {
	base := sim.Default()
	unloaded := base
	unloaded.Load = 0.5
	ref, err := sim.Run(unloaded, sim.Contender{Name: "none"})
	if err != nil {
		b.Fatal(err)
	}
	for _, load := range []float64{0.5, 1, 2, 4} {
		cfg := base
		cfg.Load = load
		for _, c := range sim.Contenders(cfg) {
			b.Run(fmt.Sprintf("load=%gx/%s", load, c.Name), func(b *testing.B) {
				var r sim.Result
				for b.Loop() {
					if r, err = sim.Run(cfg, c); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(100*r.Goodput, "goodput-%")
				b.ReportMetric(ms(r.P50), "p50-ms")
				b.ReportMetric(ms(r.P99), "p99-ms")
				b.ReportMetric(float64(r.P99)/float64(ref.P99), "p99/unloaded")
			})
		}
	}
	cfg := sim.CapacityChange(base)
	for _, c := range append(sim.Contenders(cfg)[1:], sim.StaticHalf(cfg)) {
		b.Run("change/"+c.Name, func(b *testing.B) {
			var r sim.Result
			for b.Loop() {
				if r, err = sim.Run(cfg, c); err != nil {
					b.Fatal(err)
				}
			}
			ps := sim.Phases(cfg, r)
			b.ReportMetric(100*ps[1].Goodput, "halved-goodput-%")
			b.ReportMetric(ms(ps[1].P99), "halved-p99-ms")
			b.ReportMetric(100*ps[2].Goodput, "restored-goodput-%")
			b.ReportMetric(ms(ps[2].P99), "restored-p99-ms")
			b.ReportMetric(ps[1].Settled.Seconds(), "settle-halved-s")
			b.ReportMetric(ps[2].Settled.Seconds(), "settle-restored-s")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
