package storekit_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

// stateAlgorithms are the algorithms whose state is a State, one policy each.
func stateAlgorithms() []*core.Policy {
	return []*core.Policy{
		bucketPolicy(core.TokenBucket, 5, 3, time.Second),
		bucketPolicy(core.GCRA, 5, 3, time.Second),
		bucketPolicy(core.LeakyBucket, 5, 3, time.Second),
		windowPolicy(core.FixedWindow, 5, time.Second),
		windowPolicy(core.SlidingCounter, 5, time.Second),
		core.MustPolicy(core.PolicyConfig{Name: "p", Algorithm: core.LeakyQueue, Quota: 3, Period: time.Second, Burst: 2, MaxDelay: 2 * time.Second}),
	}
}

// walk drives st through random takes, adjustments, turns given back and
// waits under p,
// calling check with every state it reaches.
func walk(p *core.Policy, seed uint64, check func(st storekit.State)) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var st storekit.State
	now := start
	for range 2000 {
		now += rng.Int64N(int64(800 * time.Millisecond / time.Microsecond))
		switch rng.IntN(5) {
		case 0:
			storekit.Adjust(p, &st, now, rng.Int64N(9)-4)
		case 1:
			storekit.ReturnTurn(p, &st, now, 1+rng.Int64N(2), rng.Int64N(int64(2*time.Second/time.Microsecond)))
		default:
			storekit.Take(p, &st, now, 1+rng.Int64N(3))
		}
		check(st)
	}
}

// TakeTo decides and takes exactly as Take, writing over whatever *d held.
func TestTakeToIsTake(t *testing.T) {
	for _, p := range stateAlgorithms() {
		rng := rand.New(rand.NewPCG(3, 4))
		var viaTake, viaTo storekit.State
		now := start
		for i := range 2000 {
			now += rng.Int64N(int64(400 * time.Millisecond / time.Microsecond))
			cost := 1 + rng.Int64N(7) // above the burst now and then: Impossible
			want := storekit.Take(p, &viaTake, now, cost)
			d := core.Decision{RetryAfter: time.Hour, Impossible: true, Degraded: true, Remaining: -1}
			storekit.TakeTo(&d, p, &viaTo, now, cost)
			require.Equal(t, want, d, "%v, step %d", p.Algorithm(), i)
			require.Equal(t, viaTake, viaTo, "%v, step %d", p.Algorithm(), i)
		}
	}
}

// Words and StateOf convert a State without loss, both ways.
func TestStateWords(t *testing.T) {
	for _, p := range stateAlgorithms() {
		walk(p, 5, func(st storekit.State) {
			a, b := st.Words()
			require.Equal(t, st, storekit.StateOf(a, b))
		})
	}
	a, b := storekit.StateOf(-3, 1<<62).Words()
	assert.Equal(t, [2]int64{-3, 1 << 62}, [2]int64{a, b})
}

// A store keeps one word of the states OneWord vouches for, so their second
// word must stay zero whatever happens to them; and OneWord vouches for no
// algorithm that uses it.
func TestOneWord(t *testing.T) {
	for _, p := range stateAlgorithms() {
		usesB := false
		walk(p, 9, func(st storekit.State) {
			if _, b := st.Words(); b != 0 {
				usesB = true
			}
		})
		assert.Equal(t, !usesB, storekit.OneWord(p), "%v", p.Algorithm())
	}
	assert.True(t, storekit.OneWord(core.PerSecond(10)))
	assert.False(t, storekit.OneWord(windowPolicy(core.SlidingLog, 5, time.Second)), "a log is no State")
}
