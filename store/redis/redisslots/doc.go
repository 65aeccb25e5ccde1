// Package redisslots is the distributed variant of backpressure's
// concurrency limit: at most N requests in flight per key across a fleet of
// instances, counted in Redis.
//
//	slots, err := redisslots.New(client, 100, redisslots.WithTTL(10*time.Second))
//	...
//	defer slots.Close()
//	lease, err := slots.Acquire(ctx, "tenant-42")
//	if err != nil {
//		return err // a *backpressure.ShedError when the key is full, or Redis's error
//	}
//	defer lease.Release(context.WithoutCancel(ctx))
//
// Each request in flight holds a lease, renewed while it runs on the Redis
// server's clock; the leases of an instance that crashes expire after the
// TTL, so its slots come back by themselves. A full key is refused with the
// same *backpressure.ShedError a backpressure.Limiter gives. When Redis is
// down, Acquire returns its error and the caller chooses whether to admit.
//
// How leases are kept, and how to answer a refusal over HTTP, is in
// docs/redis.md.
package redisslots
