package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The simulation runs on virtual time: these are decisions, not timings.

func runOne(t *testing.T, cfg Config, name string) Result {
	t.Helper()
	for _, c := range append(Contenders(cfg), StaticHalf(cfg)) {
		if c.Name == name {
			r, err := Run(cfg, c)
			require.NoError(t, err)
			return r
		}
	}
	t.Fatalf("no contender %q", name)
	return Result{}
}

func unloadedP99(t *testing.T) time.Duration {
	cfg := Default()
	cfg.Load = 0.5
	return runOne(t, cfg, "none").P99
}

func TestDeterministic(t *testing.T) {
	cfg := Default()
	cfg.Load = 2
	cfg.Span = 5 * time.Second
	a, b := runOne(t, cfg, "gradient"), runOne(t, cfg, "gradient")
	assert.Equal(t, a.Good, b.Good)
	assert.Equal(t, a.P99, b.P99)
	cfg.Seed++
	assert.NotEqual(t, a.Good, runOne(t, cfg, "gradient").Good)
}

func TestNoLimiterCollapses(t *testing.T) {
	cfg := Default()
	cfg.Load = 2
	r := runOne(t, cfg, "none")
	assert.Less(t, r.Goodput, 0.05, "every request outlives its timeout")
}

// TestAdaptiveMeetsTheGoal is issue #11's bar: at 4x, the adaptive limits,
// never told C, reach 95% of the static limit's goodput with a p99 at most
// twice the unloaded p99.
func TestAdaptiveMeetsTheGoal(t *testing.T) {
	unloaded := unloadedP99(t)
	cfg := Default()
	cfg.Load = 4
	static := runOne(t, cfg, "static")
	for _, name := range []string{"aimd", "gradient"} {
		r := runOne(t, cfg, name)
		assert.GreaterOrEqual(t, r.Goodput, 0.95*static.Goodput, name)
		assert.LessOrEqual(t, r.P99, 2*unloaded, name)
	}
}

// TestAdaptiveFollowsTheCapacity: when C halves and later doubles back, the
// adaptive limits settle within 3s each time and keep the goodput; a static
// limit tuned for either capacity loses latency or goodput.
func TestAdaptiveFollowsTheCapacity(t *testing.T) {
	unloaded := unloadedP99(t)
	cfg := CapacityChange(Default())
	for _, name := range []string{"aimd", "gradient"} {
		ps := Phases(cfg, runOne(t, cfg, name))
		for i, p := range ps[1:] {
			assert.GreaterOrEqual(t, p.Settled, time.Duration(0), "%s phase %d", name, i+1)
			assert.LessOrEqual(t, p.Settled, 3*time.Second, "%s phase %d", name, i+1)
			assert.GreaterOrEqual(t, p.Goodput, 0.95, "%s phase %d", name, i+1)
			assert.LessOrEqual(t, p.P99, 2*unloaded, "%s phase %d", name, i+1)
		}
	}
	static := Phases(cfg, runOne(t, cfg, "static"))
	assert.GreaterOrEqual(t, static[1].P50, 19*static[2].P50/10, "tuned for C, it doubles the latency at C/2")
	half := Phases(cfg, runOne(t, cfg, "static C/2"))
	assert.Less(t, half[2].Goodput, 0.55, "tuned for C/2, it wastes half of C")
}

func TestChart(t *testing.T) {
	cfg := CapacityChange(Default())
	cfg.Span = 3 * time.Second
	cfg.Warmup = time.Second
	svg := string(Chart(cfg, []Result{runOne(t, cfg, "static"), runOne(t, cfg, "gradient")}))
	assert.Contains(t, svg, "<svg")
	assert.Contains(t, svg, ">gradient</text>")
	assert.Contains(t, svg, ">true C</text>")
	assert.Contains(t, svg, "</svg>")
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	assert.Equal(t, time.Duration(3), Percentile(ds, 0.5))
	assert.Equal(t, time.Duration(5), Percentile(ds, 0.99))
	assert.Equal(t, time.Duration(0), Percentile(nil, 0.5))
}
