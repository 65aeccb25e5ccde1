package sluiceotel_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/observe/sluiceotel"
	"github.com/sluice-go/sluice/observe/sluiceslog"
	"github.com/sluice-go/sluice/store/memory"
)

// Metrics and logs from one limiter: core.Observers hands each decision to
// both. A program reads the metrics through its exporter (examples/otel
// serves them to Prometheus); here a manual reader prints them.
func Example() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	metrics, err := sluiceotel.New(provider)
	if err != nil {
		panic(err)
	}
	logs, err := sluiceslog.New(slog.Default())
	if err != nil {
		panic(err)
	}
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := core.NewLimiter(store, core.WithObserver(core.Observers(metrics.Observe, logs)))
	if err != nil {
		panic(err)
	}

	policy := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 1, Period: time.Minute, Burst: 5})
	for range 8 {
		limiter.Take(context.Background(), core.Request{Key: "203.0.113.7", Policy: policy, Cost: 1})
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != "sluice.rate_limiting.requests" {
			continue
		}
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			result, _ := p.Attributes.Value("sluice.rate_limiting.result")
			near, _ := p.Attributes.Value("sluice.rate_limiting.near_limit")
			fmt.Println(result.AsString(), "near_limit="+near.String(), p.Value)
		}
	}
	// Unordered output:
	// acquired near_limit=false 4
	// acquired near_limit=true 1
	// rejected near_limit=false 3
}

// A concurrency limit's metrics, from its events alone: its requests in
// flight and waiting, its limit, and its requests shed.
func ExampleWithLimits() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	metrics, err := sluiceotel.New(provider, sluiceotel.WithLimits("api"))
	if err != nil {
		panic(err)
	}

	limiter, err := backpressure.New(backpressure.Config{
		Controller: backpressure.Static(2),
		Name:       "api", Observer: metrics.Observe,
	})
	if err != nil {
		panic(err)
	}
	for range 3 { // the third finds both slots taken, and no queue
		if p, err := limiter.Acquire(context.Background(), "", core.Default); err == nil {
			defer p.Release()
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				if reason, ok := p.Attributes.Value("sluice.rate_limiting.reason"); ok {
					if p.Value == 0 { // WithLimits starts every reason and class at zero
						continue
					}
					fmt.Println(m.Name, reason.AsString(), p.Value)
				} else {
					fmt.Println(m.Name, p.Value)
				}
			}
		case metricdata.Gauge[int64]:
			fmt.Println(m.Name, d.DataPoints[0].Value)
		}
	}
	// Unordered output:
	// sluice.rate_limiting.shed_requests saturated 1
	// sluice.rate_limiting.queued_requests 0
	// sluice.rate_limiting.active_requests 2
	// sluice.rate_limiting.concurrency_limit 2
}
