package core_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

func TestNewPolicyRejectsBadFields(t *testing.T) {
	ok := core.Config{Name: "p", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10}
	cases := []struct {
		name  string
		edit  func(c *core.Config)
		field string
	}{
		{"empty name", func(c *core.Config) { c.Name = "" }, "Name"},
		{"long name", func(c *core.Config) { c.Name = strings.Repeat("n", 65) }, "Name"},
		{"quote in name", func(c *core.Config) { c.Name = `a"b` }, "Name"},
		{"brace in name", func(c *core.Config) { c.Name = "a{b" }, "Name"},
		{"control in name", func(c *core.Config) { c.Name = "a\nb" }, "Name"},
		{"no algorithm", func(c *core.Config) { c.Algorithm = 0 }, "Algorithm"},
		{"unknown algorithm", func(c *core.Config) { c.Algorithm = 99 }, "Algorithm"},
		{"zero quota", func(c *core.Config) { c.Quota = 0 }, "Quota"},
		{"negative quota", func(c *core.Config) { c.Quota = -1 }, "Quota"},
		{"huge quota", func(c *core.Config) { c.Quota = core.MaxQuota + 1 }, "Quota"},
		{"zero period", func(c *core.Config) { c.Period = 0 }, "Period"},
		{"negative period", func(c *core.Config) { c.Period = -time.Second }, "Period"},
		{"sub-microsecond period", func(c *core.Config) { c.Period = time.Second + time.Nanosecond }, "Period"},
		{"period too long", func(c *core.Config) { c.Period = core.MaxPeriod + time.Second }, "Period"},
		{"zero burst", func(c *core.Config) { c.Burst = 0 }, "Burst"},
		{"negative burst", func(c *core.Config) { c.Burst = -5 }, "Burst"},
		{"rate above one per µs", func(c *core.Config) { c.Quota, c.Period = 2_000_000, time.Second }, "Quota"},
		{"burst for a window", func(c *core.Config) { c.Algorithm = core.FixedWindow }, "Burst"},
		{"sliding log too large", func(c *core.Config) {
			c.Algorithm, c.Burst, c.Quota = core.SlidingLog, 0, core.MaxLogQuota+1
		}, "Quota"},
		{"sliding counter too large", func(c *core.Config) {
			c.Algorithm, c.Burst, c.Quota = core.SlidingCounter, 0, core.MaxCounterQuota+1
		}, "Quota"},
		{"refill too slow to represent", func(c *core.Config) {
			c.Quota, c.Period, c.Burst = 1, core.MaxPeriod, core.MaxQuota
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
			assert.ErrorIs(t, err, core.ErrInvalidPolicy)
			assert.Contains(t, err.Error(), tc.field)
		})
	}
	_, err := core.NewPolicy(ok)
	require.NoError(t, err)
}

func TestPolicyAccessorsAndWindow(t *testing.T) {
	tb := core.MustPolicy(core.Config{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	assert.Equal(t, "per-ip", tb.Name())
	assert.Equal(t, int64(10), tb.Burst())
	assert.Equal(t, 500*time.Millisecond, tb.Interval())
	assert.Equal(t, 5*time.Second, tb.Window(), "a bucket's window is the time to fill from empty")
	assert.Equal(t, "per-ip: token-bucket 2/1s burst 10", tb.String())

	fw := core.MustPolicy(core.Config{Name: "login", Algorithm: core.FixedWindow, Quota: 5, Period: 5 * time.Minute})
	assert.Equal(t, int64(5), fw.Burst(), "a window's burst is its quota")
	assert.Equal(t, 5*time.Minute, fw.Window())
	assert.Zero(t, fw.Interval())

	again := core.MustPolicy(core.Config{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	assert.Equal(t, tb.Fingerprint(), again.Fingerprint(), "equal policies, equal fingerprints")
	other := core.MustPolicy(core.Config{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 3, Period: time.Second, Burst: 10})
	assert.NotEqual(t, tb.Fingerprint(), other.Fingerprint())
}

func TestParseAlgorithm(t *testing.T) {
	for _, a := range []core.Algorithm{core.TokenBucket, core.GCRA, core.LeakyBucket, core.FixedWindow, core.SlidingLog, core.SlidingCounter} {
		got, err := core.ParseAlgorithm(a.String())
		require.NoError(t, err)
		assert.Equal(t, a, got)
	}
	_, err := core.ParseAlgorithm("leaky")
	assert.ErrorContains(t, err, "unknown algorithm")
	assert.Equal(t, "Algorithm(42)", core.Algorithm(42).String())
}

func TestMustPolicyPanicsOnInvalidConfig(t *testing.T) {
	assert.Panics(t, func() { core.MustPolicy(core.Config{Name: "x"}) })
}
