package client

import (
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
	assert.Equal(t, Backoff{Base: DefaultBase, Multiplier: 2, Cap: DefaultCap}, Backoff{}.withDefaults())
	assert.Equal(t, time.Second, Backoff{Base: time.Second, Cap: time.Millisecond}.Ceiling(5), "cap below base is raised to base")
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
	b := NewRetryBudget(10, 0.1)
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

	d := NewRetryBudget(0, -1)
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
