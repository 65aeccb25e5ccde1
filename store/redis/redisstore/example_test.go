package redisstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/redis/redisstore"
)

// A fleet of instances sharing limits through Redis. While Redis is down,
// each instance falls back to a local store applying a third of each limit,
// so that the fleet of three admits about one limit, not three.
func Example() {
	client := goredis.NewClient(&goredis.Options{Addr: "localhost:6379"})
	defer client.Close()
	store, err := redisstore.New(client, redisstore.WithPrefix("myapp:"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	local, err := memory.New()
	if err != nil {
		log.Fatal(err)
	}
	defer local.Close()
	limiter, err := core.NewLimiter(store, core.WithFallback(local, 3))
	if err != nil {
		log.Fatal(err)
	}

	perUser := core.MustPolicy(core.PolicyConfig{Name: "per-user", Algorithm: core.GCRA, Quota: 100, Period: time.Minute, Burst: 20})
	d, err := limiter.Take(context.Background(), core.Request{Key: "user-42", Policy: perUser, Cost: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Allowed, d.Degraded)
}

// A global limit that every request takes from: each instance leases 200
// units at a time and spends them locally, giving back what it has not spent
// within a second.
func ExampleWithLease() {
	global := core.MustPolicy(core.PolicyConfig{Name: "global", Algorithm: core.TokenBucket, Quota: 50_000, Period: time.Second, Burst: 50_000})
	client := goredis.NewClient(&goredis.Options{Addr: "localhost:6379"})
	defer client.Close()
	store, err := redisstore.New(client, redisstore.WithLease(global, 200, time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	limiter, err := core.NewLimiter(store)
	if err != nil {
		log.Fatal(err)
	}
	d, err := limiter.Take(context.Background(), core.Request{Key: "api", Policy: global, Cost: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Allowed)
}

// A global limit on a Redis Cluster, spread over eight keys in eight slots,
// so that no one node serves every decision.
func ExampleWithSplit() {
	global := core.MustPolicy(core.PolicyConfig{Name: "global", Algorithm: core.GCRA, Quota: 80_000, Period: time.Second, Burst: 8_000})
	cluster := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{"redis-1:6379", "redis-2:6379", "redis-3:6379"}})
	defer cluster.Close()
	store, err := redisstore.New(cluster, redisstore.WithSplit(global, 8))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	d, err := store.Take(context.Background(), core.Request{Key: "api", Policy: global, Cost: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Allowed, d.Limit) // Limit is the whole limit's burst
}
