package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// knownMisses are the shapes, by seed, on which Gradient misses issue 28's
// goal, with the least goodput against the static limit it keeps there.
var knownMisses = map[string]float64{
	// A third of the requests hang for the timeout, and which of them the
	// limit admits decides the goodput: in this run, static limits of 36
	// to 48 get 0.93–0.98x of the static limit at 32's, and Gradient,
	// near 41, 0.92x.
	"30% hang for the timeout, 2x/2": 0.91,
}

// TestShapes holds Gradient, the controller the docs recommend, to issue
// 28's goal on every shape of Shapes at seeds 1 and 2: above 0.5x, goodput
// at least 0.95x the static limit's at the true C and a p99 at most twice
// the unloaded one; at 0.5x, nothing shed. The simulation runs on virtual
// time: these are decisions, not timings.
func TestShapes(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("forty runs of 30 s of virtual time: a minute, tenfold under the race detector (CI runs it without)")
	}
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			for _, c := range Shapes(seed) {
				vs, err := RunCase(c, Contenders(c.Config)[3])
				require.NoError(t, err)
				g := vs[1]
				msg := fmt.Sprintf("%s, seed %d: %.3fx static's goodput, %.1f%% shed, p99 %.2fx unloaded", c.Name, seed, g.VsStatic, 100*g.ShedShare, g.VsUnloaded)
				if least, ok := knownMisses[fmt.Sprintf("%s/%d", c.Name, seed)]; ok {
					assert.GreaterOrEqual(t, g.VsStatic, least, msg)
					assert.LessOrEqual(t, g.VsUnloaded, 2.0, msg)
					continue
				}
				assert.True(t, g.Meets(PeakLoad(c.Config)), msg)
			}
		})
	}
}

// TestHangMissIsTheDraw backs knownMisses' one entry: on that run, static
// limits from 36 to 48, around where Gradient settles, all get less than
// the static limit at the true C, 32, by as much as Gradient does or
// nearly: the reference's goodput is the luck of which requests hung.
func TestHangMissIsTheDraw(t *testing.T) {
	if raceEnabled {
		t.Skip("runs of 30 s of virtual time: tenfold under the race detector")
	}
	var c Case
	for _, k := range Shapes(2) {
		if k.Name == "30% hang for the timeout, 2x" {
			c = k
		}
	}
	require.Equal(t, 32, c.Workers)
	static := func(n int) Contender {
		return Contender{Name: fmt.Sprint("static ", n), New: func(cl core.Clock) (*backpressure.Limiter, error) {
			return backpressure.New(backpressure.Config{Controller: backpressure.Static(n), Clock: cl})
		}}
	}
	vs, err := RunCase(c, static(36), static(40), static(44), static(48))
	require.NoError(t, err)
	for _, v := range vs[1:] {
		assert.True(t, v.VsStatic >= 0.92 && v.VsStatic < 0.99, "%s: %.3fx the static limit at 32's goodput", v.Contender, v.VsStatic)
	}
}
