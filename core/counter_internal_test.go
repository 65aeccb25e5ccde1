package core

import (
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
		p, err := NewPolicy(Config{Name: "c", Algorithm: SlidingCounter, Quota: 1 << 20, Period: time.Duration(period) * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
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
