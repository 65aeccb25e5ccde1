// Package redisstore is sluice's shared store: per-key rate-limit state kept
// in Redis, so that many app instances enforce one limit together. It works
// over any go-redis v9 client: a single node, Sentinel (a failover
// *Client), Redis Cluster (*ClusterClient) or a Ring.
//
//	client := goredis.NewClient(&goredis.Options{Addr: "localhost:6379"})
//	store, err := redisstore.New(client, redisstore.WithPrefix("myapp:"))
//	...
//	defer store.Close()
//	limiter, err := core.NewLimiter(store, core.WithFallback(memoryStore, instances))
//
// Every algorithm of package core runs in Redis as a Lua script that mirrors
// core's integer arithmetic, so that a decision here is field for field the
// one store/memory makes; time is the Redis server's (TIME), so instances
// whose clocks disagree still agree. Concurrent decisions are batched into
// one script call per round trip, which changes no decision. A layered
// request (TakeAll) is all or nothing, on one server and across a Cluster's
// slots alike. The state of key k under policy p is at
// <prefix>{<k>}<name>:<fingerprint>, which expires once the state is back
// to full.
//
// A caller waits for its decision until WithTimeout (default 50ms), or its
// context's deadline if earlier; then, or at once while Redis is known to be
// down, the call fails with a *core.StoreError and the Limiter applies its
// failure mode or fallback. The store makes its own connections from the
// client's options, without retries (a lost reply must not take units
// twice); the client stays the caller's to use and close.
//
// WithSplit and WithLease take a hot key's load off Redis, and WithDenyCache
// answers known denials locally, each at a stated cost in accuracy.
//
// Batches, connections, outages, each deployment's failover, the key
// layout, the tests the store is held to and its figures are in
// docs/redis.md.
package redisstore
