package redisslots_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/store/redis/redisslots"
)

// At most 20 reports rendering at once per tenant, across every instance of
// the service; an instance that crashes mid-render gives its slots back
// after 10 seconds.
func ExampleNew() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer client.Close()
	slots, err := redisslots.New(client, 20, redisslots.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer slots.Close()

	render := func(ctx context.Context, tenant string) error {
		lease, err := slots.Take(ctx, tenant)
		var rej *backpressure.ShedError
		switch {
		case errors.As(err, &rej):
			return err // 503, Retry-After: rej.RetryAfter
		case err != nil:
			log.Print(err) // Redis is down: admit, or not, as the service prefers
		default:
			defer lease.Release(context.WithoutCancel(ctx))
		}
		// ... render ...
		return nil
	}
	_ = render
}
