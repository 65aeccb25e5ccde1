// Package redisslots is the distributed variant of backpressure's
// concurrency limit: at most N requests in flight per key across a fleet of
// instances, counted in Redis.
//
//	slots, err := redisslots.New(client, 100, redisslots.WithTTL(10*time.Second))
//	...
//	defer slots.Close()
//	lease, err := slots.Take(ctx, "tenant-42")
//	if err != nil {
//		return err // a *backpressure.ShedError when the key is full, or Redis's error
//	}
//	defer lease.Release(context.WithoutCancel(ctx))
//
// Slots also serve as admit.Config.Concurrency: Acquire returns the lease as
// a backpressure.Permit. Each request in flight holds a lease, renewed while
// it runs, on the Redis server's clock; the leases of an instance that
// crashes expire after the TTL, so its slots come back by themselves. A full
// key is refused with the same *backpressure.ShedError a
// backpressure.Limiter gives. When Redis is down, Take and Acquire return
// its error and the caller chooses whether to admit.
//
// How leases are kept, and how to answer a refusal over HTTP by hand, is in
// docs/redis.md.
package redisslots
