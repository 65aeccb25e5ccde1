package core_test

import (
	"errors"
	"github.com/sluice-go/sluice/store/storekit"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

func TestNewPolicyRejectsBadFields(t *testing.T) {
	ok := core.PolicyConfig{Name: "p", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10}
	cases := []struct {
		name  string
		edit  func(c *core.PolicyConfig)
		field string
	}{
		{"empty name", func(c *core.PolicyConfig) { c.Name = "" }, "Name"},
		{"long name", func(c *core.PolicyConfig) { c.Name = strings.Repeat("n", 65) }, "Name"},
		{"quote in name", func(c *core.PolicyConfig) { c.Name = `a"b` }, "Name"},
		{"brace in name", func(c *core.PolicyConfig) { c.Name = "a{b" }, "Name"},
		{"control in name", func(c *core.PolicyConfig) { c.Name = "a\nb" }, "Name"},
		{"no algorithm", func(c *core.PolicyConfig) { c.Algorithm = 0 }, "Algorithm"},
		{"unknown algorithm", func(c *core.PolicyConfig) { c.Algorithm = 99 }, "Algorithm"},
		{"zero quota", func(c *core.PolicyConfig) { c.Quota = 0 }, "Quota"},
		{"negative quota", func(c *core.PolicyConfig) { c.Quota = -1 }, "Quota"},
		{"huge quota", func(c *core.PolicyConfig) { c.Quota = storekit.MaxCost + 1 }, "Quota"},
		{"zero period", func(c *core.PolicyConfig) { c.Period = 0 }, "Period"},
		{"negative period", func(c *core.PolicyConfig) { c.Period = -time.Second }, "Period"},
		{"sub-microsecond period", func(c *core.PolicyConfig) { c.Period = time.Second + time.Nanosecond }, "Period"},
		{"period too long", func(c *core.PolicyConfig) { c.Period = storekit.MaxPeriod + time.Second }, "Period"},
		{"zero burst", func(c *core.PolicyConfig) { c.Burst = 0 }, "Burst"},
		{"negative burst", func(c *core.PolicyConfig) { c.Burst = -5 }, "Burst"},
		{"rate above one per µs", func(c *core.PolicyConfig) { c.Quota, c.Period = 2_000_000, time.Second }, "Quota"},
		{"burst for a window", func(c *core.PolicyConfig) { c.Algorithm = core.FixedWindow }, "Burst"},
		{"sliding log too large", func(c *core.PolicyConfig) {
			c.Algorithm, c.Burst, c.Quota = core.SlidingLog, 0, 100_000+1
		}, "Quota"},
		{"sliding counter too large", func(c *core.PolicyConfig) {
			c.Algorithm, c.Burst, c.Quota = core.SlidingCounter, 0, storekit.MaxCounterQuota+1
		}, "Quota"},
		{"refill too slow to represent", func(c *core.PolicyConfig) {
			c.Quota, c.Period, c.Burst = 1, storekit.MaxPeriod, storekit.MaxCost
		}, "Burst"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			p, err := core.NewPolicy(c)
			require.Error(t, err)
			assert.Nil(t, p)
			var pe *core.PolicyError
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, tc.field, pe.Field)
			assert.ErrorAs(t, err, new(*core.PolicyError))
			assert.Contains(t, err.Error(), tc.field)
		})
	}
	_, err := core.NewPolicy(ok)
	require.NoError(t, err)
}

func TestNewPolicyChecksTheQueueBounds(t *testing.T) {
	ok := core.PolicyConfig{Name: "q", Algorithm: core.LeakyQueue, Quota: 2, Period: time.Second, Burst: 1, MaxDelay: 5 * time.Second}
	cases := []struct {
		name  string
		edit  func(c *core.PolicyConfig)
		field string
	}{
		{"no bound", func(c *core.PolicyConfig) { c.MaxDelay = 0 }, "MaxDelay"},
		{"negative delay", func(c *core.PolicyConfig) { c.MaxDelay = -time.Second }, "MaxDelay"},
		{"sub-microsecond delay", func(c *core.PolicyConfig) { c.MaxDelay = time.Second + time.Nanosecond }, "MaxDelay"},
		{"delay too long", func(c *core.PolicyConfig) { c.MaxDelay = storekit.MaxPeriod + time.Microsecond }, "MaxDelay"},
		{"negative queue", func(c *core.PolicyConfig) { c.MaxQueue = -1 }, "MaxQueue"},
		{"queue too long", func(c *core.PolicyConfig) { c.MaxQueue = 2*int64(storekit.MaxPeriod/time.Second) + 1 }, "MaxQueue"},
		{"queue at MaxInt64", func(c *core.PolicyConfig) { c.MaxQueue = 1<<63 - 1 }, "MaxQueue"},
		{"no burst", func(c *core.PolicyConfig) { c.Burst = 0 }, "Burst"},
		{"delay for a bucket", func(c *core.PolicyConfig) { c.Algorithm = core.GCRA }, "MaxDelay"},
		{"queue for a window", func(c *core.PolicyConfig) {
			c.Algorithm, c.Burst, c.MaxDelay, c.MaxQueue = core.FixedWindow, 0, 0, 3
		}, "MaxQueue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			_, err := core.NewPolicy(c)
			var pe *core.PolicyError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.field, pe.Field)
		})
	}
	for _, c := range []core.PolicyConfig{
		ok,
		{Name: "q", Algorithm: core.LeakyQueue, Quota: 2, Period: time.Second, Burst: 1, MaxQueue: 10},
		{Name: "q", Algorithm: core.LeakyQueue, Quota: 1, Period: storekit.MaxPeriod, Burst: 1, MaxDelay: storekit.MaxPeriod, MaxQueue: 1},
	} {
		_, err := core.NewPolicy(c)
		require.NoError(t, err, "%+v", c)
	}
}

func TestLeakyQueuePolicy(t *testing.T) {
	q := core.MustPolicy(core.PolicyConfig{Name: "upstream", Algorithm: core.LeakyQueue, Quota: 2, Period: time.Second, Burst: 1, MaxDelay: 5 * time.Second})
	assert.Equal(t, 5*time.Second, q.MaxDelay())
	assert.Equal(t, int64(1), q.Burst())
	assert.Equal(t, 500*time.Millisecond, q.Window(), "Burst intervals, as the bucket family")
	assert.Equal(t, "upstream: leaky-queue 2/1s burst 1 max delay 5s", q.String())
	assert.Zero(t, core.PerSecond(3).MaxDelay(), "nothing else waits")

	// The bound is the tighter of the two, and a policy is its bound: the
	// same limit given either way is the same policy.
	byQueue := core.MustPolicy(core.PolicyConfig{Name: "upstream", Algorithm: core.LeakyQueue, Quota: 2, Period: time.Second, Burst: 1, MaxQueue: 10})
	both := core.MustPolicy(core.PolicyConfig{Name: "upstream", Algorithm: core.LeakyQueue, Quota: 2, Period: time.Second, Burst: 1, MaxQueue: 10, MaxDelay: time.Hour})
	assert.Equal(t, 5*time.Second, byQueue.MaxDelay())
	assert.Equal(t, q.Fingerprint(), byQueue.Fingerprint())
	assert.Equal(t, q.Fingerprint(), both.Fingerprint())
	longer := core.MustPolicy(core.PolicyConfig{Name: "upstream", Algorithm: core.LeakyQueue, Quota: 2, Period: time.Second, Burst: 1, MaxDelay: 6 * time.Second})
	assert.NotEqual(t, q.Fingerprint(), longer.Fingerprint())

	// A share keeps the bound in time: each party's queue waits as long.
	half, err := q.Share(2)
	require.NoError(t, err)
	assert.Equal(t, time.Second, half.Interval())
	assert.Equal(t, 5*time.Second, half.MaxDelay())
	assert.NotEqual(t, q.Fingerprint(), half.Fingerprint())
}

// The other algorithms' fingerprints name their keys in Redis: adding the
// queue must not change them (the figure is the one before it came).
func TestFingerprintsAreStable(t *testing.T) {
	tb := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	assert.Equal(t, uint64(0x2d6b54b890405db6), tb.Fingerprint())
}

func TestPolicyAccessorsAndWindow(t *testing.T) {
	tb := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	assert.Equal(t, "per-ip", tb.Name())
	assert.Equal(t, int64(10), tb.Burst())
	assert.Equal(t, 500*time.Millisecond, tb.Interval())
	assert.Equal(t, 5*time.Second, tb.Window(), "a bucket's window is the time to fill from empty")
	assert.Equal(t, "per-ip: token-bucket 2/1s burst 10", tb.String())

	fw := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.FixedWindow, Quota: 5, Period: 5 * time.Minute})
	assert.Equal(t, int64(5), fw.Burst(), "a window's burst is its quota")
	assert.Equal(t, 5*time.Minute, fw.Window())
	assert.Zero(t, fw.Interval())

	again := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	assert.Equal(t, tb.Fingerprint(), again.Fingerprint(), "equal policies, equal fingerprints")
	other := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 3, Period: time.Second, Burst: 10})
	assert.NotEqual(t, tb.Fingerprint(), other.Fingerprint())
}

func TestAlgorithmText(t *testing.T) {
	for _, a := range []core.Algorithm{core.TokenBucket, core.GCRA, core.LeakyBucket, core.FixedWindow, core.SlidingLog, core.SlidingCounter, core.LeakyQueue} {
		text, err := a.MarshalText()
		require.NoError(t, err)
		assert.Equal(t, a.String(), string(text))
		var got core.Algorithm
		require.NoError(t, got.UnmarshalText(text))
		assert.Equal(t, a, got)
	}
	var got core.Algorithm
	assert.ErrorContains(t, got.UnmarshalText([]byte("leaky")), "unknown algorithm")
	_, err := core.Algorithm(42).MarshalText()
	assert.ErrorContains(t, err, "unknown algorithm")
	assert.Equal(t, "Algorithm(42)", core.Algorithm(42).String())
}

func TestMustPolicyPanicsOnInvalidConfig(t *testing.T) {
	assert.Panics(t, func() { core.MustPolicy(core.PolicyConfig{Name: "x"}) })
}

func TestPolicyShare(t *testing.T) {
	tb := core.MustPolicy(core.PolicyConfig{Name: "tb", Algorithm: core.TokenBucket, Quota: 3, Period: time.Second, Burst: 10})
	same, err := tb.Share(1)
	require.NoError(t, err)
	assert.Same(t, tb, same)

	q, err := tb.Share(4)
	require.NoError(t, err)
	assert.Equal(t, "tb", q.Name())
	assert.Equal(t, core.TokenBucket, q.Algorithm())
	assert.Equal(t, int64(2), q.Burst(), "10/4 rounded down")
	assert.Equal(t, 4*tb.Interval(), q.Interval(), "the rate exactly a quarter")
	assert.NotEqual(t, tb.Fingerprint(), q.Fingerprint())

	q, err = tb.Share(25)
	require.NoError(t, err)
	assert.Equal(t, int64(1), q.Burst(), "never below one unit")

	fw := core.MustPolicy(core.PolicyConfig{Name: "fw", Algorithm: core.SlidingLog, Quota: 10, Period: time.Minute})
	q, err = fw.Share(3)
	require.NoError(t, err)
	assert.Equal(t, int64(3), q.Quota())
	assert.Equal(t, int64(3), q.Burst())
	assert.Equal(t, time.Minute, q.Period())
	q, err = fw.Share(30)
	require.NoError(t, err)
	assert.Equal(t, int64(1), q.Quota())

	for _, n := range []int{0, -1, (1 << 16) + 1} {
		_, err = tb.Share(n)
		assert.ErrorAs(t, err, new(*core.PolicyError), "n=%d", n)
	}
	slow := core.MustPolicy(core.PolicyConfig{Name: "slow", Algorithm: core.GCRA, Quota: 1, Period: 200 * 24 * time.Hour, Burst: 1})
	_, err = slow.Share(2)
	var pe *core.PolicyError
	require.ErrorAs(t, err, &pe, "one unit every 400 days is beyond MaxPeriod")
	assert.Equal(t, "Quota", pe.Field)
}

func TestPerSecondMinuteHour(t *testing.T) {
	for _, tc := range []struct {
		p      *core.Policy
		name   string
		period time.Duration
	}{
		{core.PerSecond(10), "10-per-second", time.Second},
		{core.PerMinute(60), "60-per-minute", time.Minute},
		{core.PerHour(3), "3-per-hour", time.Hour},
	} {
		assert.Equal(t, tc.name, tc.p.Name())
		assert.Equal(t, core.GCRA, tc.p.Algorithm())
		assert.Equal(t, tc.period, tc.p.Period())
		assert.Equal(t, tc.p.Quota(), tc.p.Burst())
	}
	assert.Equal(t, time.Microsecond, core.PerSecond(1_000_000).Interval())
	for _, n := range []int64{0, -1, 1_000_001} {
		func() {
			defer func() {
				err, _ := recover().(error)
				var pe *core.PolicyError
				require.ErrorAs(t, err, &pe, "n=%d", n)
				assert.Equal(t, "Quota", pe.Field)
			}()
			core.PerSecond(n)
			t.Errorf("PerSecond(%d) did not panic", n)
		}()
	}
}
