package storekit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/storekit"
)

// MaxCost is core's own bound: the Limiter refuses one unit more before any
// store sees it, and lets MaxCost itself through to the store.
func TestMaxCostIsCoresBound(t *testing.T) {
	store, err := memory.New()
	require.NoError(t, err)
	l, err := core.NewLimiter(store)
	require.NoError(t, err)
	p := core.PerSecond(10)

	_, err = l.Take(context.Background(), core.Request{Key: "k", Policy: p, Cost: storekit.MaxCost + 1})
	var re *core.RequestError
	require.True(t, errors.As(err, &re), "MaxCost+1: %v", err)
	assert.Equal(t, int64(storekit.MaxCost+1), re.Value)

	d, err := l.Take(context.Background(), core.Request{Key: "k", Policy: p, Cost: storekit.MaxCost})
	require.NoError(t, err)
	assert.True(t, d.Impossible, "MaxCost is a valid request, past the burst")
}
