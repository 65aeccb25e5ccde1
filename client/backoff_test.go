package client

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBackoffCeilings(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Cap: 10 * time.Second}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000}
	for i, w := range want {
		assert.Equal(t, w*time.Millisecond, b.Ceiling(i), "retry %d", i)
	}
	assert.Equal(t, 10*time.Second, b.Ceiling(1000), "no overflow")
	assert.Equal(t, 10*time.Second, b.Ceiling(1<<40))
	assert.Equal(t, 100*time.Millisecond, b.Ceiling(-3))
	three := Backoff{Base: time.Second, Multiplier: 3, Cap: time.Minute}
	assert.Equal(t, 9*time.Second, three.Ceiling(2))
	assert.Equal(t, Backoff{Base: DefaultBackoffBase, Multiplier: 2, Cap: DefaultBackoffCap}, Backoff{}.withDefaults())
}

func TestBackoffValidate(t *testing.T) {
	for _, b := range []Backoff{
		{},
		{Base: time.Second, Cap: time.Second, Multiplier: 1},
		{Base: time.Millisecond, Multiplier: 1e6, Jitter: NoJitter},
		{Cap: time.Minute, Jitter: DecorrelatedJitter},
	} {
		assert.NoError(t, b.Validate(), "%+v", b)
	}
	for _, tc := range []struct {
		b    Backoff
		want string
	}{
		{Backoff{Base: -time.Second}, "Base -1s is negative"},
		{Backoff{Cap: -1}, "Cap -1ns is negative"},
		{Backoff{Multiplier: 0.5}, "Multiplier 0.5 is not a finite number >= 1"},
		{Backoff{Multiplier: -2}, "Multiplier -2"},
		{Backoff{Multiplier: math.NaN()}, "Multiplier NaN"},
		{Backoff{Multiplier: math.Inf(1)}, "Multiplier +Inf"},
		{Backoff{Base: time.Second, Cap: time.Millisecond}, "Cap 1ms is below Base 1s"},
		{Backoff{Base: 10 * time.Second}, "Cap 5s is below Base 10s"}, // the default Cap
		{Backoff{Jitter: NoJitter + 1}, "Jitter 4 is not a known mode"},
		{Backoff{Jitter: -1}, "Jitter -1 is not a known mode"},
	} {
		err := tc.b.Validate()
		assert.ErrorIs(t, err, ErrInvalidConfig, "%+v", tc.b)
		assert.ErrorContains(t, err, tc.want)
	}
	// Every problem is reported, not just the first.
	err := Backoff{Base: -1, Cap: -1, Jitter: 7}.Validate()
	assert.ErrorContains(t, err, "Base -1ns")
	assert.ErrorContains(t, err, "Cap -1ns")
	assert.ErrorContains(t, err, "Jitter 7")
}

func TestBackoffDelayStaysBoundedOnInvalidSchedules(t *testing.T) {
	// Delay does not validate, but it must neither panic nor go wild.
	r := rand.New(rand.NewPCG(3, 4))
	for _, b := range []Backoff{
		{Base: time.Second, Cap: time.Millisecond},
		{Base: -time.Second, Cap: -time.Second, Multiplier: math.NaN()},
		{Jitter: 42, Multiplier: math.Inf(1)},
		{Jitter: DecorrelatedJitter, Base: time.Second, Cap: time.Millisecond},
	} {
		hi := max(b.withDefaults().Base, b.withDefaults().Cap)
		var prev time.Duration
		for i := range 50 {
			d := b.Delay(i, prev, r)
			assert.True(t, d >= 0 && d <= hi, "%+v retry %d: %v", b, i, d)
			prev = d
		}
	}
}

func TestBackoffNoJitterIsTheCeiling(t *testing.T) {
	b := Backoff{Base: 200 * time.Millisecond, Cap: 5 * time.Second, Jitter: NoJitter}
	for i := range 10 {
		assert.Equal(t, b.Ceiling(i), b.Delay(i, 0, nil))
	}
}

func TestBackoffJitterRanges(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	base, cp := 200*time.Millisecond, 5*time.Second
	full := Backoff{Base: base, Cap: cp}
	equal := Backoff{Base: base, Cap: cp, Jitter: EqualJitter}
	decor := Backoff{Base: base, Cap: cp, Jitter: DecorrelatedJitter}
	var sumFull time.Duration
	for n := range 2000 {
		i := n % 8
		c := full.Ceiling(i)
		d := full.Delay(i, 0, r)
		assert.True(t, d >= 0 && d < c, "full %v under %v", d, c)
		if i == 7 {
			sumFull += d
		}
		e := equal.Delay(i, 0, r)
		assert.True(t, e >= c/2 && e < c, "equal %v in [%v, %v)", e, c/2, c)
	}
	// Full jitter's mean is half the ceiling (5s/2 at retry 7).
	mean := sumFull / 250
	assert.InDelta(t, float64(cp/2), float64(mean), float64(400*time.Millisecond))

	prev := time.Duration(0)
	for range 2000 {
		d := decor.Delay(0, prev, r)
		hi := min(cp, 3*max(prev, base))
		assert.True(t, d >= base && d <= hi, "decorrelated %v in [%v, %v]", d, base, hi)
		prev = d
	}
	assert.Equal(t, cp, Backoff{Base: cp, Cap: cp, Jitter: DecorrelatedJitter}.Delay(0, cp, r))
}

func TestBackoffIsDeterministicGivenTheSource(t *testing.T) {
	for _, j := range []Jitter{FullJitter, EqualJitter, DecorrelatedJitter, NoJitter} {
		b := Backoff{Jitter: j}
		r1, r2 := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
		var p1, p2 time.Duration
		for i := range 20 {
			p1, p2 = b.Delay(i, p1, r1), b.Delay(i, p2, r2)
			assert.Equal(t, p1, p2, "%v retry %d", j, i)
		}
	}
}

func TestJitterString(t *testing.T) {
	assert.Equal(t, "full", FullJitter.String())
	assert.Equal(t, "equal", EqualJitter.String())
	assert.Equal(t, "decorrelated", DecorrelatedJitter.String())
	assert.Equal(t, "none", NoJitter.String())
	assert.Equal(t, "Jitter(?)", Jitter(9).String())
}

func TestLockedRandIsSeededPerClient(t *testing.T) {
	a, b := newLockedRand(nil), newLockedRand(nil)
	same := 0
	for range 10 {
		if a.uniform(time.Hour) == b.uniform(time.Hour) {
			same++
		}
	}
	assert.Less(t, same, 2, "two clients must not share a seed")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 1000 {
				_ = a.delay(Backoff{}, i%5, 0)
			}
		})
	}
	wg.Wait()
	assert.Zero(t, a.uniform(0))
}

func TestRetryBudget(t *testing.T) {
	b := newBudget(t, 10, 0.1)
	assert.Equal(t, 10.0, b.Tokens())
	for range 4 {
		b.Failure()
	}
	assert.True(t, b.CanRetry(), "6 > 5")
	b.Failure()
	assert.False(t, b.CanRetry(), "5 is not more than half")
	b.Success()
	assert.True(t, b.CanRetry())
	for range 100 {
		b.Failure()
	}
	assert.Zero(t, b.Tokens(), "never negative")
	for range 51 {
		b.Success()
	}
	assert.InDelta(t, 5.1, b.Tokens(), 1e-9)
	for range 1000 {
		b.Success()
	}
	assert.Equal(t, 10.0, b.Tokens(), "never above the maximum")

	d := newBudget(t, DefaultBudgetTokens, DefaultBudgetRatio)
	assert.Equal(t, float64(DefaultBudgetTokens), d.Tokens())

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				if (g+i)%2 == 0 {
					d.Failure()
				} else {
					d.Success()
				}
				_ = d.CanRetry()
			}
		})
	}
	wg.Wait()
	assert.True(t, d.Tokens() >= 0 && d.Tokens() <= 10)
}

func TestNewRetryBudgetRejectsBadParameters(t *testing.T) {
	for _, tc := range []struct {
		tokens, ratio float64
		want          string
	}{
		{0, 0.1, "maxTokens 0 is not in (0, 1e+09]"},
		{-1, 0.1, "maxTokens -1"},
		{math.NaN(), 0.1, "maxTokens NaN"},
		{math.Inf(1), 0.1, "maxTokens +Inf"},
		{2e9, 0.1, "maxTokens 2e+09"},
		{10, 0, "ratio 0 is not in (0, 1]"},
		{10, -0.1, "ratio -0.1"},
		{10, 1.5, "ratio 1.5"},
		{10, math.NaN(), "ratio NaN"},
		{10, 1e-7, "below the resolution"},
		{1e-7, 0.1, "below the resolution"},
	} {
		b, err := NewRetryBudget(tc.tokens, tc.ratio)
		assert.Nil(t, b)
		assert.ErrorIs(t, err, ErrInvalidConfig)
		assert.ErrorContains(t, err, tc.want)
	}
}

func TestRetryBudgetEdges(t *testing.T) {
	// The largest bucket neither overflows nor goes negative.
	big := newBudget(t, MaxBudgetTokens, 1)
	for range 10 {
		big.Success()
	}
	assert.Equal(t, float64(MaxBudgetTokens), big.Tokens())
	big.Failure()
	assert.Equal(t, float64(MaxBudgetTokens-1), big.Tokens())

	// A ratio finer than gRPC's three decimals is kept, not rounded away.
	fine := newBudget(t, 2, 0.0005)
	fine.Failure()
	fine.Failure()
	assert.Zero(t, fine.Tokens())
	for range 3 {
		fine.Success()
	}
	assert.InDelta(t, 0.0015, fine.Tokens(), 1e-12)

	// Ratio 1: one success pays for one failure.
	one := newBudget(t, 4, 1)
	one.Failure()
	one.Failure()
	assert.False(t, one.CanRetry(), "2 is not more than half of 4")
	one.Success()
	assert.True(t, one.CanRetry())
}
