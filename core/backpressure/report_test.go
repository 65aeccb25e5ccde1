package backpressure

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// coreRecorder collects core events.
type coreRecorder struct {
	mu     sync.Mutex
	events []core.Event
}

func (r *coreRecorder) observe(_ context.Context, e core.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *coreRecorder) take() []core.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	es := r.events
	r.events = nil
	return es
}

// Each kind of event reaches a core.Observer as its outcome, named and
// classed: a wait that ends admitted, one displaced, one given up, a shed at
// once, and the limit moving.
func TestReportTo(t *testing.T) {
	clk := newFakeClock()
	rec := &coreRecorder{}
	alg, err := NewAIMD(AIMDConfig{Initial: 1, Min: 1, Max: 4, Tolerance: -1})
	require.NoError(t, err)
	l, err := New(Config{Controller: alg, Queue: 1, MaxWait: time.Minute, Clock: clk, Observer: ReportTo("api", rec.observe)})
	require.NoError(t, err)
	ctx := context.Background()

	first, err := l.Acquire(ctx, "", Default)
	require.NoError(t, err)
	waiter := acquireAsync(t, ctx, l, "", Sheddable, 1)
	_, err = l.Acquire(ctx, "", Sheddable) // the queue is full, of its class
	rej := rejection(t, err)
	clk.Advance(3 * time.Second)
	first.Done(Succeeded) // admits the waiter, and AIMD grows the limit to 2
	second := recv(t, waiter)
	require.NoError(t, second.err)
	second.p.Release()

	gone, cancel := context.WithCancel(ctx)
	held := []Permit{mustAcquire(t, l, Default), mustAcquire(t, l, Default)}
	canceled := acquireAsync(t, gone, l, "", Critical, 1)
	cancel()
	assert.ErrorIs(t, recv(t, canceled).err, context.Canceled)
	for _, p := range held {
		p.Release()
	}

	events := rec.take()
	want := []core.Event{
		{Kind: core.Queued, LimitName: "api", Class: "sheddable"},
		{Kind: core.Shed, LimitName: "api", Class: "sheddable", Err: rej},
		{Kind: core.LimitChanged, LimitName: "api", Units: 2},
		{Kind: core.Waited, LimitName: "api", Class: "sheddable", Latency: 3 * time.Second},
		{Kind: core.Queued, LimitName: "api", Class: "critical"},
		{Kind: core.Shed, LimitName: "api", Class: "critical", Err: context.Canceled},
	}
	// The limit change and the wait it ends are reported from two
	// goroutines, in either order.
	assert.ElementsMatch(t, want, events)
	for _, e := range events {
		if e.Kind == core.Shed && e.Class == "sheddable" {
			assert.Same(t, rej, e.Err, "the rejection its caller got")
		}
	}
	assert.Nil(t, ReportTo("api", nil))
}

func mustAcquire(t *testing.T, l *Limiter, c core.Class) Permit {
	t.Helper()
	p, err := l.Acquire(context.Background(), "", c)
	require.NoError(t, err)
	return p
}
