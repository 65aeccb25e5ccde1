package sluiceotel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/observe/sluiceotel"
	"github.com/sluice-go/sluice/store/memory"
)

// BenchmarkObserve records one event per operation on the SDK, from every
// core at once, as request goroutines do.
//
//	go test ./observe/sluiceotel -run '^$' -bench Observe -benchmem
func BenchmarkObserve(b *testing.B) {
	allowed := core.Event{Kind: core.Allowed, Key: "203.0.113.7", Decision: core.Decision{Policy: perIP, Allowed: true, Limit: 3, Remaining: 2}, Latency: 300 * time.Nanosecond}
	failed := core.Event{Kind: core.StoreFailed, Key: "203.0.113.7", Decision: core.Decision{Policy: perIP, Allowed: true, Degraded: true}, Err: &core.StoreError{Op: "take", Err: errRefused}, Latency: time.Millisecond}
	for _, c := range []struct {
		name  string
		event core.Event
		opts  []sluiceotel.Option
	}{
		{"allowed", allowed, nil},
		{"store-failed", failed, nil},
		{"allowed/key", allowed, []sluiceotel.Option{sluiceotel.WithKeyAttribute()}},
	} {
		b.Run(c.name, func(b *testing.B) {
			provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			defer provider.Shutdown(context.Background())
			m, err := sluiceotel.New(provider, c.opts...)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m.Observe(ctx, c.event)
				}
			})
		})
	}
}

// BenchmarkTake is a limiter's decision on the memory store (one key, one
// caller), without an observer and with Metrics on the SDK: what the
// metrics add to a decision.
//
//	go test ./observe/sluiceotel -run '^$' -bench Take -benchmem
func BenchmarkTake(b *testing.B) {
	policy := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 1_000_000, Period: time.Second, Burst: 1_000_000})
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer provider.Shutdown(context.Background())
	m, err := sluiceotel.New(provider)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts []core.Option
	}{
		{"observer=none", nil},
		{"observer=sluiceotel", []core.Option{core.WithObserver(m.Observe)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			store, err := memory.New()
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			l, err := core.NewLimiter(store, c.opts...)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Take(ctx, core.Request{Key: "203.0.113.7", Policy: policy, Cost: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
