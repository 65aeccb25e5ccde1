package backpressure

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// Each thing a Limiter does reaches its core.Observer as a core.Event,
// named and classed: a slot taken at once and given back, a wait that ends
// admitted, one given up, a shed at once, and the limit moving.
func TestEventsReachACoreObserver(t *testing.T) {
	clk := newFakeClock()
	rec := &recorder{all: true}
	ctl, err := NewAIMD(AIMDConfig{Initial: 1, Min: 1, Max: 4, Tolerance: -1})
	require.NoError(t, err)
	l, err := New(Config{Controller: ctl, Queue: 1, MaxWait: time.Minute, Clock: clk, Name: "api", Observer: rec.observe})
	require.NoError(t, err)
	ctx := context.Background()

	first, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	waiter := acquireAsync(t, ctx, l, "", core.Sheddable, 1)
	_, err = l.Acquire(ctx, "", core.Sheddable) // the queue is full, of its class
	shed := rejection(t, err)
	clk.Advance(3 * time.Second)
	first.Done(core.Succeeded) // admits the waiter, and AIMD grows the limit to 2
	second := recv(t, waiter)
	require.NoError(t, second.err)
	second.p.Release()

	gone, cancel := context.WithCancel(ctx)
	held := []Permit{mustAcquire(t, l, core.Default), mustAcquire(t, l, core.Default)}
	canceled := acquireAsync(t, gone, l, "", core.Critical, 1)
	cancel()
	assert.ErrorIs(t, recv(t, canceled).err, context.Canceled)
	for _, p := range held {
		p.Release()
	}

	events := rec.take()
	want := []core.Event{
		{Kind: core.LimitChanged, LimitName: "api", Limit: 1, Cause: "start"},
		{Kind: core.Admitted, LimitName: "api", Class: core.Default, Limit: 1},
		{Kind: core.Queued, LimitName: "api", Class: core.Sheddable},
		{Kind: core.Shed, LimitName: "api", Class: core.Sheddable, Err: shed},
		{Kind: core.Released, LimitName: "api"},
		{Kind: core.LimitChanged, LimitName: "api", Limit: 2, Cause: "grew"},
		{Kind: core.Waited, LimitName: "api", Class: core.Sheddable, Waited: 3 * time.Second},
		{Kind: core.Released, LimitName: "api"},
		{Kind: core.Admitted, LimitName: "api", Class: core.Default, Limit: 2},
		{Kind: core.Admitted, LimitName: "api", Class: core.Default, Limit: 2},
		{Kind: core.Queued, LimitName: "api", Class: core.Critical},
		{Kind: core.Shed, LimitName: "api", Class: core.Critical, Err: context.Canceled},
		{Kind: core.Released, LimitName: "api"},
		{Kind: core.Released, LimitName: "api"},
	}
	// The limit change and the wait it ends are reported from two
	// goroutines, in either order.
	assert.ElementsMatch(t, want, events)
	for _, e := range events {
		if e.Kind == core.Shed && e.Class == core.Sheddable {
			assert.Same(t, shed, e.Err, "the error its caller got")
		}
	}
}

func mustAcquire(t *testing.T, l *Limiter, c core.Class) Permit {
	t.Helper()
	p, err := l.Acquire(context.Background(), "", c)
	require.NoError(t, err)
	return p
}
