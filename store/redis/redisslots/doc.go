// Package redisslots is the distributed variant of backpressure's
// concurrency limit: at most N requests in flight per key across a fleet of
// instances, counted in Redis.
//
// Each request in flight holds a lease: a member of a sorted set per key,
// scored by its expiry. A lease is taken, renewed and given back by one Lua
// script call each, on the Redis server's clock (TIME), so instances with
// skewed clocks agree. An instance renews the leases it holds every
// RenewEvery while their requests run; an instance that crashes stops
// renewing, and its leases expire after the TTL: the slots of a crashed
// instance come back by themselves. Expired leases are swept by the next
// call on their key, and a key expires once its last lease has.
//
//	slots, err := redisslots.New(client, 100, redisslots.WithTTL(10*time.Second))
//	defer slots.Close()
//	lease, err := slots.Take(ctx, "tenant-42")
//	if err != nil {
//		return err // a *backpressure.ShedError when the key is full
//	}
//	defer lease.Release(context.WithoutCancel(ctx))
//
// Keys are <prefix>{<key>}: every script touches one key, and the hash tag
// keeps it whole on Redis Cluster. A lease taken by a call whose reply was
// lost is not lost: its id makes the take idempotent, and go-redis's retry
// of the same call finds it granted.
//
// # Failures
//
// Instances renew the leases they hold every third of the TTL (WithTTL,
// default 30 s); a crashed instance stops renewing, and its slots come back
// after the TTL (TestCrashedHolderSlotsComeBack). A full key is refused
// with the same *backpressure.ShedError a backpressure.Limiter gives. When
// Redis is down, Acquire returns the error, and the caller chooses whether
// to admit.
//
// # Beside the HTTP middleware
//
// admit.Config.Concurrency takes a backpressure.Limiter only: the
// adapters' slot is a value taken under a lock in the process, with
// classes, a queue and an adaptive limit, none of which a lease in Redis
// has. Use Slots around the work it bounds, in the handler or a middleware
// of your own, behind the rate limits:
//
//	lease, err := slots.Take(r.Context(), tenant)
//	var rej *backpressure.ShedError
//	switch {
//	case errors.As(err, &rej):
//		secs := max((rej.RetryAfter+time.Second-1)/time.Second, 1) // whole seconds, rounded up
//		w.Header().Set("Retry-After", strconv.Itoa(int(secs)))
//		http.Error(w, "tenant busy", http.StatusServiceUnavailable)
//		return
//	case err != nil: // Redis down: admit, or not, as the service prefers
//	default:
//		defer lease.Release(context.WithoutCancel(r.Context()))
//	}
package redisslots
