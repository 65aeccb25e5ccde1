package redisstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeRedis is a send function for a pipe that records the batches it is
// given and answers each op with its now, once released.
type fakeRedis struct {
	mu      sync.Mutex
	batches [][]int64 // the ops' nows, batch by batch
	gate    chan struct{}
	entered chan int // the size of each batch as it starts
}

func newFakeRedis() *fakeRedis {
	return &fakeRedis{gate: make(chan struct{}), entered: make(chan int, 100)}
}

func (f *fakeRedis) send(ctx context.Context, batch []*op) error {
	f.entered <- len(batch)
	select {
	case <-f.gate:
	case <-ctx.Done():
		for _, o := range batch {
			o.err = ctx.Err()
		}
		return nil
	}
	var nows []int64
	for _, o := range batch {
		nows = append(nows, o.now)
		o.out = []int64{o.now}
	}
	f.mu.Lock()
	f.batches = append(f.batches, nows)
	f.mu.Unlock()
	return nil
}

// release lets n batches through.
func (f *fakeRedis) release(n int) {
	for range n {
		f.gate <- struct{}{}
	}
}

func never() <-chan struct{} { return nil }

// TestPipeBatchesWhatWaits: while the only lane is busy, operations queue;
// the lane then takes them in order, at most a batch at a time.
func TestPipeBatchesWhatWaits(t *testing.T) {
	f := newFakeRedis()
	p := newPipe(pipeConfig{lanes: 1, maxLanes: 1, maxBatch: 3, send: f.send})
	defer p.close(func() {})

	results := make(chan int64, 10)
	start := func(now int64) {
		go func() {
			o := p.get(opTake, now)
			if err := p.do(o, time.Now(), never(), time.Time{}, context.Background()); err != nil {
				t.Error(err)
				return
			}
			results <- o.out[0]
			p.put(o)
		}()
	}
	start(1)
	require.Equal(t, 1, <-f.entered, "alone, an op goes at once")
	for i := int64(2); i <= 6; i++ {
		start(i)
		require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.queue)-p.head == int(i-1) }, 10*time.Second, time.Millisecond)
	}
	f.release(1)
	assert.Equal(t, 3, <-f.entered, "then up to a batch of what waited")
	f.release(1)
	assert.Equal(t, 2, <-f.entered, "and the rest")
	f.release(1)
	for range 6 {
		<-results
	}
	assert.Equal(t, [][]int64{{1}, {2, 3, 4}, {5, 6}}, f.batches, "in the order they came")
}

// TestPipeCallerGivesUp: a caller whose wait ends gets an error at once; its
// op, if not yet sent, is never sent, and if sent, is finished by the lane
// and recycled; the lane and its batch carry on.
func TestPipeCallerGivesUp(t *testing.T) {
	f := newFakeRedis()
	p := newPipe(pipeConfig{lanes: 1, maxLanes: 1, maxBatch: 10, send: f.send})
	defer p.close(func() {})

	// In flight: the caller gives up, the batch goes on.
	stop := make(chan struct{})
	o := p.get(opTake, 1)
	errc := make(chan error, 1)
	go func() { errc <- p.do(o, time.Now(), stop, time.Time{}, context.Background()) }()
	require.Equal(t, 1, <-f.entered)
	close(stop)
	assert.ErrorIs(t, <-errc, context.DeadlineExceeded)

	// Queued behind it: one caller gives up, one waits.
	stop2 := make(chan struct{})
	gone, kept := p.get(opTake, 2), p.get(opTake, 3)
	go func() { errc <- p.do(gone, time.Now(), stop2, time.Time{}, context.Background()) }()
	require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.queue) == 1 }, 10*time.Second, time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- p.do(kept, time.Now(), never(), time.Time{}, context.Background()) }()
	require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.queue) == 2 }, 10*time.Second, time.Millisecond)
	close(stop2)
	assert.ErrorIs(t, <-errc, context.DeadlineExceeded)

	f.release(1) // the first batch ends with no one waiting for it
	assert.Equal(t, 1, <-f.entered, "the op given up before it was sent is dropped")
	f.release(1)
	require.NoError(t, <-done)
	assert.Equal(t, []int64{3}, kept.out)
	assert.Equal(t, [][]int64{{1}, {3}}, f.batches)

	// A caller's context with an earlier deadline ends its wait too.
	ctx, cancel := context.WithCancel(context.Background())
	late := p.get(opTake, 4)
	go func() { errc <- p.do(late, time.Now(), never(), time.Time{}, ctx) }()
	require.Equal(t, 1, <-f.entered)
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	f.release(1)
}

// TestPipeBounded: a queue at its bound refuses more at once, and a closed
// pipe refuses everything; operations still queued at Close fail.
func TestPipeBounded(t *testing.T) {
	f := newFakeRedis()
	p := newPipe(pipeConfig{lanes: 1, maxLanes: 1, maxBatch: 1, maxQueue: 2, send: f.send})
	ops := make([]*op, 3)
	errs := make(chan error, 3)
	for i := range ops {
		ops[i] = p.get(opTake, int64(i))
		go func() { errs <- p.do(ops[i], time.Now(), never(), time.Time{}, context.Background()) }()
		if i == 0 {
			<-f.entered
		}
	}
	require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.queue) == 2 }, 10*time.Second, time.Millisecond)
	o := p.get(opTake, 9)
	assert.ErrorIs(t, p.do(o, time.Now(), never(), time.Time{}, context.Background()), errOverloaded, "a full queue refuses at once")

	p.close(func() {})
	for range ops {
		require.NoError(t, <-errs, "each caller gets its op back")
	}
	assert.ErrorIs(t, ops[0].err, context.Canceled, "the batch on its way is cut short")
	assert.ErrorIs(t, ops[1].err, errClosed, "the queued ones fail")
	assert.ErrorIs(t, ops[2].err, errClosed)
	o = p.get(opTake, 10)
	assert.ErrorIs(t, p.do(o, time.Now(), never(), time.Time{}, context.Background()), errClosed, "a closed pipe refuses")
}

// TestPipeLosesNoWakeup hammers a pipe of a few lanes from many callers:
// every operation comes back, with its own result.
func TestPipeLosesNoWakeup(t *testing.T) {
	var sends atomic.Int64
	p := newPipe(pipeConfig{lanes: 3, maxLanes: 3, maxBatch: 8, send: func(_ context.Context, batch []*op) error {
		sends.Add(1)
		for _, o := range batch {
			o.out = []int64{o.now}
		}
		return nil
	}})
	defer p.close(func() {})
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 2000 {
				now := int64(g*1_000_000 + i)
				o := p.get(opTake, now)
				if err := p.do(o, time.Now(), never(), time.Time{}, context.Background()); err != nil {
					t.Error(err)
					return
				}
				if o.out[0] != now {
					t.Errorf("got %d, want %d", o.out[0], now)
				}
				p.put(o)
			}
		})
	}
	wg.Wait()
	t.Logf("64,000 operations in %d batches", sends.Load())
}

// TestPipeGoesDown: a round trip that fails for want of a connection, and a
// ping that fails after it, put the pipe down: the batch waiting in another
// lane is cut short, what is queued fails, new operations fail at once, and
// the pipe is up again as soon as a ping gets through.
func TestPipeGoesDown(t *testing.T) {
	broken := errors.New("connection refused")
	var fail atomic.Bool
	entered := make(chan struct{}, 10)
	pings := make(chan error)
	p := newPipe(pipeConfig{lanes: 2, maxLanes: 2, maxBatch: 1,
		send: func(ctx context.Context, batch []*op) error {
			entered <- struct{}{}
			if fail.Load() {
				batch[0].err = broken
				return broken
			}
			<-ctx.Done() // a reply that never comes
			batch[0].err = ctx.Err()
			return nil
		},
		ping: func(context.Context) error { return <-pings },
	})
	defer p.close(func() {})
	defer close(pings)

	hung := p.get(opTake, 1)
	errs := make(chan error, 3)
	go func() { errs <- p.do(hung, time.Now(), never(), time.Time{}, context.Background()) }()
	<-entered
	fail.Store(true)
	failing := p.get(opTake, 2)
	go func() { errs <- p.do(failing, time.Now(), never(), time.Time{}, context.Background()) }()
	<-entered
	assert.False(t, p.down.Load(), "not down before a ping failed")
	pings <- broken // the ping asking whether Redis still answers
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	assert.ErrorIs(t, failing.err, broken, "the failed round trip's op")
	assert.ErrorIs(t, hung.err, context.Canceled, "the batch waiting in the other lane is cut short")
	require.Eventually(t, p.down.Load, 10*time.Second, time.Millisecond)

	o := p.get(opTake, 3)
	assert.ErrorIs(t, p.do(o, time.Now(), never(), time.Time{}, context.Background()), errDown, "down: refused at once")
	pings <- broken // still down
	fail.Store(false)
	pings <- nil
	require.Eventually(t, func() bool { return !p.down.Load() }, 10*time.Second, time.Millisecond)
	o = p.get(opTake, 4)
	go func() { errs <- p.do(o, time.Now(), never(), time.Time{}, context.Background()) }()
	<-entered
	p.close(func() {})
	require.NoError(t, <-errs)
	assert.ErrorIs(t, o.err, context.Canceled, "up again: sent")
}

// TestPipeStaysUpWhenPingAnswers: a round trip that failed (a reply later
// than the connection timeout) while Redis still answers a ping is not an
// outage: the pipe stays up, and what is queued meanwhile, and after, is
// sent rather than failed at once. Lanes whose round trips fail while the
// ping is on its way share its answer.
func TestPipeStaysUpWhenPingAnswers(t *testing.T) {
	late := errors.New("i/o timeout")
	var fail atomic.Int32
	var pinged atomic.Int32
	entered := make(chan struct{}, 10)
	pings := make(chan error)
	p := newPipe(pipeConfig{lanes: 2, maxLanes: 2, maxBatch: 1,
		send: func(ctx context.Context, batch []*op) error {
			entered <- struct{}{}
			if fail.Add(-1) >= 0 {
				batch[0].err = late
				return late
			}
			batch[0].out = []int64{batch[0].now}
			return nil
		},
		ping: func(context.Context) error {
			pinged.Add(1)
			return <-pings
		},
	})
	defer p.close(func() {})

	fail.Store(2)
	errs := make(chan error, 2)
	for i := range 2 {
		o := p.get(opTake, int64(i))
		go func() { errs <- p.do(o, time.Now(), never(), time.Time{}, context.Background()) }()
		<-entered
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	require.Eventually(t, func() bool {
		p.probeMu.Lock()
		defer p.probeMu.Unlock()
		return p.probing != nil && p.probing.joined == 1
	}, 10*time.Second, time.Millisecond, "both lanes wait for one ping")
	pings <- nil // Redis answers
	for i := range 4 {
		o := p.get(opTake, int64(10+i))
		require.NoError(t, p.do(o, time.Now(), never(), time.Time{}, context.Background()), "call %d after late replies", i)
		assert.NoError(t, o.err)
		assert.Equal(t, []int64{int64(10 + i)}, o.out)
		p.put(o)
	}
	assert.False(t, p.down.Load())
	assert.Equal(t, int32(1), pinged.Load(), "one ping for both lanes' late replies")
}

// TestPipeInline: a caller that finds the pipe idle sends its operation
// itself, under its own deadline; one that finds a caller doing so queues
// for the lane, which the inline caller hands on when done; after an
// inline call fails, callers leave everything to the lanes for a while.
func TestPipeInline(t *testing.T) {
	var mu sync.Mutex
	var inline []bool // per batch: sent under the caller's deadline
	failNext := atomic.Bool{}
	gate := make(chan struct{})
	entered := make(chan struct{}, 10)
	p := newPipe(pipeConfig{lanes: 1, maxLanes: 1, maxBatch: 4, patience: time.Hour, inline: true,
		send: func(ctx context.Context, batch []*op) error {
			_, has := ctx.Deadline()
			mu.Lock()
			inline = append(inline, has)
			mu.Unlock()
			entered <- struct{}{}
			<-gate
			for _, o := range batch {
				o.out = []int64{o.now}
			}
			if failNext.Swap(false) {
				for _, o := range batch {
					o.err = errors.New("lost")
				}
				return errors.New("lost")
			}
			return nil
		}})
	defer p.close(func() {})
	defer close(gate) // a failed test leaves no send waiting
	deadline := time.Now().Add(time.Hour)
	do := func(now int64) chan error {
		errc := make(chan error, 1)
		go func() {
			o := p.get(opTake, now)
			errc <- p.do(o, time.Now(), never(), deadline, context.Background())
		}()
		return errc
	}
	sent := func() []bool {
		mu.Lock()
		defer mu.Unlock()
		return append([]bool(nil), inline...)
	}

	idle := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.idle == p.running
	}
	require.Eventually(t, idle, 10*time.Second, time.Millisecond)
	first := do(1)
	<-entered
	second := do(2) // the pipe is not idle: it queues, and the only lane is held
	require.Never(t, func() bool { return len(entered) > 0 }, 50*time.Millisecond, 5*time.Millisecond,
		"the lane the inline caller holds is not woken")
	gate <- struct{}{}
	require.NoError(t, <-first)
	<-entered // the inline caller, done, woke the lane for the second
	gate <- struct{}{}
	require.NoError(t, <-second)
	assert.Equal(t, []bool{true, false}, sent(), "the first by its caller, the second by the lane")

	failNext.Store(true)
	require.Eventually(t, idle, 10*time.Second, time.Millisecond)
	third := do(3)
	<-entered
	gate <- struct{}{}
	require.NoError(t, <-third)
	require.Eventually(t, idle, 10*time.Second, time.Millisecond)
	fourth := do(4)
	<-entered
	gate <- struct{}{}
	require.NoError(t, <-fourth)
	assert.Equal(t, []bool{true, false, true, false}, sent(), "after an inline failure, the lane sends")
}
