package backpressure_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// A global limit of two requests in flight, with room for one more to wait
// up to 100ms, and a slot of the two kept for critical traffic.
func ExampleNew() {
	l, err := backpressure.New(backpressure.Config{
		Controller: backpressure.Static(2),
		Queue:      1,
		MaxWait:    100 * time.Millisecond,
		Headroom:   backpressure.Headroom{Critical: 0.5},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	p, err := l.Acquire(ctx, "", core.Default)
	fmt.Println("default:", err)
	_, err = l.Acquire(ctx, "", core.Sheddable)
	var rej *backpressure.ShedError
	if errors.As(err, &rej) {
		fmt.Println("sheddable:", rej.Reason, "retry after", rej.RetryAfter)
	}
	c, err := l.Acquire(ctx, "", core.Critical)
	fmt.Println("critical:", err)
	c.Done(core.Succeeded)
	p.Done(core.Succeeded)
	fmt.Println("in flight:", l.InFlight())
	// Output:
	// default: <nil>
	// sheddable: wait-timeout retry after 1s
	// critical: <nil>
	// in flight: 0
}

// The usual shape of a request under a Limiter: Release deferred right
// after Acquire frees the slot on every path, and Done reports how the work
// went, which adaptive limits learn from.
func ExamplePermit() {
	l, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(8)})
	if err != nil {
		panic(err)
	}
	handle := func(ctx context.Context, work func(context.Context) error) error {
		p, err := l.Acquire(ctx, "", core.Default)
		if err != nil {
			return err // a *backpressure.ShedError: answer 503 with Retry-After
		}
		defer p.Release()
		if err := work(ctx); err != nil {
			p.Done(core.Failed) // the service is overloaded: back off
			return err
		}
		p.Done(core.Succeeded)
		return nil
	}
	err = handle(context.Background(), func(context.Context) error { return nil })
	fmt.Println(err, l.InFlight())
	// Output: <nil> 0
}

// A limit that follows the service's latency: Gradient measures the
// latency at a low concurrency, then grows the limit while latency stays
// near it and shrinks it when requests start to queue. MaxLatency is a
// guardrail: a request slower than that counts as dropped, whatever the
// baseline says.
func ExampleNewGradient() {
	g, err := backpressure.NewGradient(backpressure.GradientConfig{Min: 4, Max: 500})
	if err != nil {
		panic(err)
	}
	prev := g.Limit()
	l, err := backpressure.New(backpressure.Config{
		Controller: g,
		Queue:      32,
		MaxWait:    50 * time.Millisecond,
		MaxLatency: 2 * time.Second,
		Observer: func(ctx context.Context, e core.Event) {
			if e.Kind == core.LimitChanged && e.Cause != "start" {
				fmt.Println("limit", prev, "->", e.Limit)
				prev = int(e.Limit)
			}
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("measuring the baseline at", l.Limit())
	// Output: measuring the baseline at 10
}

// AIMD judges each round trip's latency against a baseline it measures
// first, from half its initial limit down. With a negative Tolerance it judges no
// latency, and needs drops to find the limit: errors the caller reports as
// Dropped, or requests slower than MaxLatency.
func ExampleNewAIMD() {
	a, err := backpressure.NewAIMD(backpressure.AIMDConfig{})
	if err != nil {
		panic(err)
	}
	fmt.Println("measuring the baseline at", a.Limit())

	a, err = backpressure.NewAIMD(backpressure.AIMDConfig{Initial: 10, Min: 2, Max: 200, Tolerance: -1})
	if err != nil {
		panic(err)
	}
	l, err := backpressure.New(backpressure.Config{Controller: a, MaxLatency: 300 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	p, _ := l.Acquire(context.Background(), "", core.Default)
	p.Done(core.Failed)
	fmt.Println("loss only, after a drop:", l.Limit())
	// Output:
	// measuring the baseline at 10
	// loss only, after a drop: 9
}

// At most 4 requests in flight per client, and 100 in all.
func ExampleConfig_perKey() {
	l, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(100), PerKey: 4})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 5 {
		_, err = l.Acquire(ctx, "client-42", core.Default)
	}
	fmt.Println(err)
	// Output: backpressure: default request shed: key-saturated
}

// One observer for rate limits and concurrency limits: a Limiter reports
// its events, named "api", to the core.Observer a core.Limiter reports its
// decisions to.
func ExampleConfig_observer() {
	observe := func(_ context.Context, e core.Event) {
		fmt.Println(e.Kind, e.LimitName, e.Class, e.Err)
	}
	l, err := backpressure.New(backpressure.Config{
		Controller: backpressure.Static(1),
		Name:       "api", Observer: observe,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	p, _ := l.Acquire(ctx, "", core.Default)
	_, _ = l.Acquire(ctx, "", core.Sheddable)
	p.Done(core.Succeeded)
	// Output:
	// limit-changed api default <nil>
	// admitted api default <nil>
	// shed api sheddable backpressure: sheddable request shed: saturated
	// released api default <nil>
}
