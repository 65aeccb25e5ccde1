// Package redis is sluice's shared store: per-key rate-limit state kept in
// Redis, so that many app instances enforce one limit together. It works
// over any go-redis v9 UniversalClient: a single node, Sentinel (a
// failover *Client), Redis Cluster (*ClusterClient) or a Ring.
//
//	client := goredis.NewClient(&goredis.Options{
//		Addr:                  "localhost:6379",
//		ContextTimeoutEnabled: true, // lets the store's deadline reach the socket
//		MaxRetries:            -1,   // see "Client options" below
//	})
//	store, err := redis.New(client, redis.WithPrefix("myapp:"))
//	limiter, err := core.NewLimiter(store, core.WithFallback(memoryStore))
//
// # One round trip per decision
//
// Every algorithm of package core runs in Redis as a Lua script, one
// EVALSHA per Take, TakeAll, Adjust or Reset (EVAL once, when a server does
// not have the script yet: after a restart or SCRIPT FLUSH; Preload sends
// them all up front). The scripts mirror core's integer math step for step,
// so that a decision here is field for field the decision store/memory
// makes for the same requests at the same times; the conformance suite and
// a randomized differential test against store/memory prove it. The Lua is
// in lua/: a prelude, one file per algorithm, and a driver, assembled into
// one script per algorithm (used whenever all the layers of a call share
// an algorithm) and a generic one. Because a script makes its functions and
// tables anew on every call, a single Take under GCRA or a token bucket has
// a hand-inlined script of its own, about half as costly for Redis.
//
// # Keys
//
// The state of key k under policy p is at
//
//	<prefix>{<p.Name()>:<p.Fingerprint() as 16 hex digits>:<k>}
//
// stable across processes and deployments; a changed policy (another quota,
// period, burst or algorithm) has another fingerprint, so it starts afresh
// rather than misreading old state. The braces are the Redis Cluster hash
// tag: a key's slot depends on its policy and user key only. User keys may
// hold any bytes: '}' is escaped as "%7D" and '%' as "%25", so the tag
// always spans the whole user key. The prefix (default DefaultPrefix) may
// not contain braces.
//
// The state is a string of integers ("tokens:last" for the token bucket,
// "tat" for GCRA, "level:last" for the leaky bucket, "end:count" for the
// fixed window, "end:curr:prev" for the sliding counter); the sliding log
// is a list of "at:cost" entries in insertion order followed by their total.
// The log is trimmed on every call and, as in core, holds at most Quota
// entries (a charge beyond them merges into the newest).
//
// # Expiry
//
// Every key expires when its state is back to full, so that nothing
// lingers: the decision's ResetAfter for the bucket algorithms and the
// fixed window, the moment the newest entry leaves the window for the
// sliding log, and the moment the weighted estimate reaches zero for good
// for the sliding counter. The TTL is set in milliseconds, rounded up. A
// call that leaves a state full deletes its key. Forgetting a full state
// changes no decision.
//
// # Time
//
// By default the scripts read the Redis server's TIME, in microseconds, so
// that app instances whose clocks disagree still agree on every limit.
// WithClock uses the caller's clock instead (tests use a core.ManualClock);
// TTLs are then reckoned in that clock's time plus a grace (WithTTLGrace,
// DefaultClockGrace by default), so that a key never expires before its
// state is full in the clock's terms, even when the clock runs behind
// Redis's or, in a test, barely moves.
//
// # Layered limits and Redis Cluster
//
// TakeAll decides several layers (IP, user, route...) as one: either all
// take or none does, and the layers that would have passed report their
// standing without the request. On one server (or when every key falls in
// one slot) one script decides every layer, exactly as store/memory does.
//
// On a Cluster the layers' keys are in different slots in general, and no
// hash tag could put every IP with every user (one constant tag would put
// the whole fleet on one shard). The store groups the layers by slot (CRC16
// of the tag), runs one script per slot, all in one pipelined round trip
// (one request per node, in parallel), and if a layer is denied, runs a
// second round trip, on that path only, that gives back what the other
// slots took and replays core's order where it matters (the layers after
// the first denial only peek). Decisions are then identical to the single
// server's. The cost of this is a brief window, one round trip long, in
// which units taken for a request that is eventually denied are visible to
// concurrent requests on those keys: such a request may be denied, or see
// fewer Remaining, though the units are given back a moment later. A Ring
// shards by hash tag too and is grouped by tag. If a refund fails (a node
// went away), its units stay taken until the key's TTL, and the request is
// still reported denied.
//
// # Outages and deadlines
//
// Every call has a deadline (WithTimeout, DefaultTimeout by default) and
// fails with a *core.StoreError when it passes, when Redis is down, or when
// a reply cannot be read; a core.Limiter turns that into its failure mode
// (fail open, fail closed, or a fallback store) and reports it to its
// observer. The store never panics and never waits past the deadline: a
// killed server fails the call at once, a hung one (SIGSTOP) at the
// deadline. Calls that start within the same sixteenth of the timeout share
// one deadline and one timer, instead of a context.WithTimeout each (which
// would cost a microsecond of CPU and five allocations per call), so a
// call's deadline is between the timeout and 17/16 of it. A call is not cut
// short when its caller's context is cancelled: it is brief, and better
// finished than abandoned (an abandoned script may have taken its units,
// and its connection would have to be closed). A caller's context with an
// earlier deadline is honoured.
//
// # Client options
//
// The client's settings are the caller's; for limiter traffic we recommend:
//
//   - ContextTimeoutEnabled: true. Without it go-redis ignores context
//     deadlines on its sockets, and the store then has to hold each call to
//     its deadline from a goroutine of its own, which costs throughput (the
//     abandoned call lingers until ReadTimeout).
//   - MaxRetries: -1 (no retries), or 1 at most: a script retried after a
//     lost reply may take its units twice, and retries cannot help within a
//     deadline of a few milliseconds.
//   - PoolSize at least the number of concurrent callers, and a small
//     PoolTimeout and DialTimeout (the deadline bounds them anyway).
//
// # Deny cache
//
// WithDenyCache (off by default) lets an instance answer a request it knows
// will be denied without a round trip: once Redis has denied cost units on
// a key until RetryAfter, the same request on that key is denied locally
// until then, so that a client hammering one key does not turn each request
// into Redis load. It is exact while nobody gives units back: a refund or a
// Reset on another instance frees the key early, and this instance goes on
// denying until the remembered time. Local refunds and resets clear the
// entry. See WithDenyCache for what a cached decision reports.
//
// # Limits
//
// Lua numbers are doubles: core's policy limits keep every value below
// 2^53, and costs and Adjust deltas must stay well below that too.
package redis
