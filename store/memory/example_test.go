package memory_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
)

// The embedded store, bounded to 100,000 keys, behind a limiter: each
// client IP gets its own bucket of 3, refilled at one a second.
func Example() {
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) // tests pin the time; leave it out in production
	store, err := memory.New(memory.WithMaxKeys(100_000), memory.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close() // stops the background sweep
	limiter, err := core.NewLimiter(store)
	if err != nil {
		log.Fatal(err)
	}
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 3})
	ctx := context.Background()
	for i := range 4 {
		d, err := limiter.Take(ctx, core.Request{Key: "203.0.113.7", Policy: perIP, Cost: 1})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(i+1, d.Allowed, d.Remaining, d.RetryAfter)
	}
	d, _ := limiter.Take(ctx, core.Request{Key: "198.51.100.20", Policy: perIP, Cost: 1})
	fmt.Println("another client:", d.Allowed, d.Remaining)
	// Output:
	// 1 true 2 0s
	// 2 true 1 0s
	// 3 true 0 0s
	// 4 false 0 1s
	// another client: true 2
}
