package backpressure

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// TestNoSlotLeaks runs requests that panic, time out, are cancelled while
// waiting or while working, drop and succeed, all at once on the real
// clock, and checks that every slot and place in the queue comes back.
func TestNoSlotLeaks(t *testing.T) {
	g, err := NewGradient(GradientConfig{Min: 2, Window: time.Millisecond, MinSamples: 2, ProbeSamples: 2, ProbeInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	l, err := New(Config{Controller: g, PerKey: 3, Queue: 8, MaxWait: 2 * time.Millisecond,
		Headroom: Headroom{Critical: 0.25, Default: 0.25}, MaxLatency: time.Millisecond})
	require.NoError(t, err)
	var admitted, panicked, shed, canceled atomic.Int64
	var wg sync.WaitGroup
	for i := range 800 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(3000))*time.Microsecond)
			defer cancel()
			if rng.IntN(4) == 0 {
				go cancel() // a client that goes away at any moment
			}
			p, err := l.Acquire(ctx, fmt.Sprint(i%7), core.Class(rng.IntN(numClasses)))
			switch {
			case err == nil:
			case errorsIsRejected(err):
				shed.Add(1)
				return
			default:
				canceled.Add(1)
				return
			}
			admitted.Add(1)
			defer func() {
				if recover() != nil {
					panicked.Add(1)
				}
			}()
			defer p.Release()
			switch rng.IntN(5) {
			case 0:
				panic("handler bug")
			case 1:
				<-ctx.Done() // works until its client times out
				p.Done(core.Failed)
			case 2:
				time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
				p.Done(core.Succeeded)
			case 3:
				p.Done(core.Ignored)
			default:
				// leaves it to the deferred Release
			}
		})
	}
	wg.Wait()
	t.Logf("admitted %d (panicked %d), shed %d, canceled %d; limit %d", admitted.Load(), panicked.Load(), shed.Load(), canceled.Load(), l.Limit())
	assert.Equal(t, 0, l.InFlight())
	assert.Equal(t, 0, l.Waiting())
	assert.Empty(t, l.keys)
	assert.Positive(t, admitted.Load())
	assert.Positive(t, panicked.Load())
	assert.Positive(t, shed.Load()+canceled.Load())
	for r := range l.queues {
		assert.Nil(t, l.queues[r].head)
	}
}

func errorsIsRejected(err error) bool {
	_, ok := err.(*ShedError)
	return ok
}
