package core_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

func TestObserversCallsEachInTurn(t *testing.T) {
	var calls []string
	named := func(name string) core.Observer {
		return func(_ context.Context, e core.Event) { calls = append(calls, name+":"+e.Kind.String()) }
	}
	l, err := core.NewLimiter(newMemory(t), core.WithObserver(core.Observers(named("metrics"), nil, named("log"))))
	require.NoError(t, err)
	_, err = l.Take(context.Background(), core.Request{Key: "k", Policy: perIP, Cost: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"metrics:allowed", "log:allowed"}, calls)
}

func TestObserversOfNone(t *testing.T) {
	assert.Nil(t, core.Observers())
	assert.Nil(t, core.Observers(nil, nil))
	rec := &recorder{}
	only := core.Observers(nil, rec.observe)
	require.NotNil(t, only)
	only(context.Background(), core.Event{Kind: core.Denied})
	assert.Equal(t, []core.Kind{core.Denied}, rec.outcomes())
}
