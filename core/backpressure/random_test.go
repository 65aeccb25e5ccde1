package backpressure

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// TestRandomOperations drives a Limiter with random admissions and
// completions on a fake clock, with any class byte and any key, and checks
// its books after every step: what is in flight is what is held, no key
// over its limit, no class over its room, no key tracked that holds
// nothing.
func TestRandomOperations(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		aimd, err := NewAIMD(AIMDConfig{Initial: 8, Min: 1, Max: 30, ProbeSamples: 3})
		require.NoError(t, err)
		l, clock, _ := newLimiter(t, Config{Controller: aimd, PerKey: 3, MaxKeys: 5,
			Headroom: Headroom{Critical: 0.2, Default: 0.3}, MaxLatency: 40 * time.Millisecond})
		type held struct {
			p   Permit
			key string
		}
		var hs []held
		for step := range 3000 {
			clock.Advance(time.Duration(rng.IntN(20)) * time.Millisecond)
			if len(hs) > 0 && rng.IntN(2) == 0 {
				i := rng.IntN(len(hs))
				h := hs[i]
				hs = append(hs[:i], hs[i+1:]...)
				h.p.Done(core.Outcome(rng.IntN(4))) // 3 is no core.Outcome: treated as core.Ignored
				if rng.IntN(3) == 0 {
					h.p.Release()
				}
			} else {
				class := core.Class(rng.IntN(5))
				key := fmt.Sprint(rng.IntN(8))
				limit, inFlight := l.Limit(), l.InFlight()
				p, err := l.Acquire(context.Background(), key, class)
				switch {
				case class >= numClasses:
					require.Error(t, err)
					require.NotErrorIs(t, err, ErrShed)
				case err == nil:
					hs = append(hs, held{p, key})
					room := limit
					switch class {
					case core.Default:
						room -= int(0.2 * float64(limit))
					case core.Sheddable:
						room -= int(0.2*float64(limit)) + int(0.3*float64(limit))
					}
					require.Less(t, inFlight, room, "seed %d step %d: %v admitted past its room", seed, step, class)
				default:
					require.ErrorIs(t, err, ErrShed)
				}
			}
			require.Equal(t, len(hs), l.InFlight(), "seed %d step %d", seed, step)
			perKey := map[string]int{}
			for _, h := range hs {
				perKey[h.key]++
			}
			require.Len(t, l.keys, len(perKey), "seed %d step %d", seed, step)
			for k, n := range perKey {
				require.LessOrEqual(t, n, 3, "key %s", k)
			}
			require.GreaterOrEqual(t, l.Limit(), 1)
			require.LessOrEqual(t, l.Limit(), 30)
		}
		for _, h := range hs {
			h.p.Release()
		}
		require.Zero(t, l.InFlight())
		require.Empty(t, l.keys)
	}
}
