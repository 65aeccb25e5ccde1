package sluicetest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
)

func TestStoreFailsOnDemand(t *testing.T) {
	ctx := context.Background()
	s := sluicetest.NewStore(sluicetest.NewManualClock(start))
	r := core.Request{Key: "k", Policy: perIP, Cost: 1}
	d, err := s.Take(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, int64(4), d.Remaining)

	s.Fail(nil)
	_, err = s.Take(ctx, r)
	assert.ErrorIs(t, err, sluicetest.ErrDown)
	assert.ErrorIs(t, s.TakeAll(ctx, []core.Request{r}, make([]core.Decision, 1)), sluicetest.ErrDown)
	_, err = s.Adjust(ctx, r)
	assert.ErrorIs(t, err, sluicetest.ErrDown)
	assert.ErrorIs(t, s.Reset(ctx, "k", perIP), sluicetest.ErrDown)
	timeout := errors.New("i/o timeout")
	s.Fail(timeout)
	_, err = s.Take(ctx, r)
	assert.ErrorIs(t, err, timeout)

	s.Recover()
	d, err = s.Take(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, int64(3), d.Remaining, "the state is as Fail found it")
}

func TestStoreResetKey(t *testing.T) {
	ctx := context.Background()
	s := sluicetest.NewStore(sluicetest.NewManualClock(start))
	other := core.MustPolicy(core.PolicyConfig{Name: "other", Algorithm: core.FixedWindow, Quota: 3, Period: 60e9})
	ds := make([]core.Decision, 2)
	for _, key := range []string{"a", "a", "b"} {
		require.NoError(t, s.TakeAll(ctx, []core.Request{{Key: key, Policy: perIP, Cost: 1}, {Key: key, Policy: other, Cost: 1}}, ds))
	}
	require.NoError(t, s.ResetKey(ctx, "a"))
	require.NoError(t, s.TakeAll(ctx, []core.Request{{Key: "a", Policy: perIP, Cost: 1}, {Key: "a", Policy: other, Cost: 1}}, ds))
	assert.Equal(t, []int64{4, 2}, []int64{ds[0].Remaining, ds[1].Remaining}, "a starts afresh under both policies")
	require.NoError(t, s.TakeAll(ctx, []core.Request{{Key: "b", Policy: perIP, Cost: 1}, {Key: "b", Policy: other, Cost: 1}}, ds))
	assert.Equal(t, []int64{3, 1}, []int64{ds[0].Remaining, ds[1].Remaining}, "b keeps its standing")
}
