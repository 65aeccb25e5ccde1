package storekit

import (
	"github.com/sluice-go/sluice/core"

	"math/rand/v2"
	"testing"
	"time"
)

// firstFit, which sizes the sliding counter's RetryAfter and ResetAfter,
// finds exactly what a scan of every microsecond finds, for periods whose
// real-valued answers are whole numbers and for those whose are not.
func TestFirstFitMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, period := range []int64{1, 7, 10, 60, 997, 1000, 4096, 5000} {
		policy, err := core.NewPolicy(core.PolicyConfig{Name: "c", Algorithm: core.SlidingCounter, Quota: 1 << 20, Period: time.Duration(period) * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		p := specOf(policy)
		for range 2_000 {
			prev := 1 + rng.Int64N(2_000)
			room := rng.Int64N(prev+2) - 1
			from := rng.Int64N(period)
			want := int64(-1)
			if room >= 0 {
				for e := from; e < period; e++ {
					if p.weigh(prev, e) <= room {
						want = e
						break
					}
				}
			}
			if got := p.firstFit(prev, room, from); got != want {
				t.Fatalf("period %d: firstFit(%d, %d, %d) = %d, a scan finds %d", period, prev, room, from, got, want)
			}
		}
	}
}

// At the sizes where float rounding moves the guess (counts up to
// MaxCounterQuota, periods up to MaxPeriod), firstFit finds what a plain
// binary search finds; weigh never rises with elapsed time, so that search
// is exact.
func TestFirstFitMatchesSearchAtScale(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	maxPeriod := int64(MaxPeriod / time.Microsecond)
	for range 200_000 {
		period := 1 + rng.Int64N(maxPeriod)
		if rng.IntN(2) == 0 {
			period = []int64{1_000_000, 60_000_000, 3_600_000_000, maxPeriod}[rng.IntN(4)]
		}
		policy, err := core.NewPolicy(core.PolicyConfig{Name: "c", Algorithm: core.SlidingCounter, Quota: MaxCounterQuota, Period: time.Duration(period) * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		p := specOf(policy)
		prev := 1 + rng.Int64N(MaxCounterQuota)
		room := rng.Int64N(prev+1) - 1
		if rng.IntN(4) == 0 {
			room = rng.Int64N(4) - 1
		}
		from := int64(0)
		if rng.IntN(2) == 0 {
			from = rng.Int64N(period)
		}
		want := binarySearchFit(p, prev, room, from)
		if got := p.firstFit(prev, room, from); got != want {
			t.Fatalf("period %d: firstFit(%d, %d, %d) = %d, a binary search finds %d", period, prev, room, from, got, want)
		}
	}
}

func binarySearchFit(p *spec, prev, room, from int64) int64 {
	if room < 0 {
		return -1
	}
	if p.weigh(prev, from) <= room {
		return from
	}
	lo, hi := from, p.period
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; p.weigh(prev, mid) <= room {
			hi = mid
		} else {
			lo = mid
		}
	}
	if hi == p.period {
		return -1
	}
	return hi
}
