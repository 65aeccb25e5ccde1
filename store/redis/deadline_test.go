package redis

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeadlines(t *testing.T) {
	const timeout = 40 * time.Millisecond
	d := newDeadlines(timeout)

	t.Run("span", func(t *testing.T) {
		start := time.Now()
		ctx, cancel := d.with(context.Background())
		defer cancel()
		dl, ok := ctx.Deadline()
		require.True(t, ok)
		assert.GreaterOrEqual(t, dl.Sub(start), timeout)
		assert.LessOrEqual(t, dl.Sub(start), timeout+timeout/16+time.Millisecond)
		assert.NoError(t, ctx.Err())
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
			t.Fatal("the span never ended")
		}
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		assert.False(t, time.Now().Before(dl.Add(-time.Millisecond)), "not before its deadline")
	})

	t.Run("shared", func(t *testing.T) {
		shared := false
		for range 10 { // a span may end between two calls, rarely
			a, _ := d.with(context.Background())
			b, _ := d.with(context.Background())
			if a.(*span) == b.(*span) {
				shared = true
				break
			}
		}
		assert.True(t, shared, "calls starting together share a span")
	})

	t.Run("values", func(t *testing.T) {
		type key struct{}
		parent := context.WithValue(context.Background(), key{}, "v")
		ctx, cancel := d.with(parent)
		defer cancel()
		assert.Equal(t, "v", ctx.Value(key{}), "the caller's values go with the call")
		_, ok := ctx.Deadline()
		assert.True(t, ok)
	})

	t.Run("caller-cancellation", func(t *testing.T) {
		parent, stop := context.WithCancel(context.Background())
		ctx, cancel := d.with(parent)
		defer cancel()
		stop()
		assert.NoError(t, ctx.Err(), "a call is finished, not abandoned, when its caller goes")
	})

	t.Run("earlier-caller-deadline", func(t *testing.T) {
		parent, stop := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer stop()
		want, _ := parent.Deadline()
		ctx, cancel := d.with(parent)
		defer cancel()
		got, ok := ctx.Deadline()
		require.True(t, ok)
		assert.Equal(t, want, got, "the caller's earlier deadline holds")
		<-ctx.Done()
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
	})
}
