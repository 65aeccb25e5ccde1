package sluicetest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/sluicetest"
)

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestManualClockMovesOnlyWhenTold(t *testing.T) {
	c := sluicetest.NewManualClock(epoch)
	assert.Equal(t, epoch, c.Now())
	c.Advance(time.Second)
	assert.Equal(t, epoch.Add(time.Second), c.Now())
	c.Set(epoch)
	assert.Equal(t, epoch, c.Now())
	var zero sluicetest.ManualClock
	assert.True(t, zero.Now().IsZero())
}

// Timers run inside the Advance that reaches them, in the order they fall
// due; a stopped one never runs, and says whether it stopped anything.
func TestManualClockTimers(t *testing.T) {
	c := sluicetest.NewManualClock(epoch)
	var order []string
	c.AfterFunc(2*time.Second, func() { order = append(order, "2s") })
	c.AfterFunc(time.Second, func() { order = append(order, "1s") })
	stop := c.AfterFunc(1500*time.Millisecond, func() { order = append(order, "1.5s") })
	assert.Equal(t, 3, c.Timers())
	assert.True(t, stop())
	assert.False(t, stop(), "already stopped")
	c.Advance(999 * time.Millisecond)
	assert.Empty(t, order)
	c.Advance(5 * time.Second)
	assert.Equal(t, []string{"1s", "2s"}, order)
	assert.Zero(t, c.Timers())

	ran := c.AfterFunc(0, func() { order = append(order, "now") })
	c.Advance(0)
	assert.Equal(t, "now", order[len(order)-1])
	assert.False(t, ran(), "a timer that ran cannot be stopped")
}

// SleepUntil returns once the clock reaches the time, or with ctx's error.
func TestManualClockSleepUntil(t *testing.T) {
	c := sluicetest.NewManualClock(epoch)
	require.NoError(t, c.SleepUntil(context.Background(), epoch), "the time has come")

	var woke atomic.Bool
	done := make(chan error, 1)
	go func() {
		err := c.SleepUntil(context.Background(), epoch.Add(time.Minute))
		woke.Store(true)
		done <- err
	}()
	c.Advance(30 * time.Second)
	assert.False(t, woke.Load(), "half way there")
	c.Advance(30 * time.Second)
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the sleeper never woke")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, c.SleepUntil(ctx, epoch.Add(time.Hour)), context.Canceled)
}
