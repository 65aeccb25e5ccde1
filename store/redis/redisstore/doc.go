// Package redisstore is sluice's shared store: per-key rate-limit state kept in
// Redis, so that many app instances enforce one limit together. It works
// over any go-redis v9 UniversalClient: a single node, Sentinel (a
// failover *Client), Redis Cluster (*ClusterClient) or a Ring; see "High
// availability" for what each promises through a failover.
//
//	client := goredis.NewClient(&goredis.Options{Addr: "localhost:6379"})
//	store, err := redisstore.New(client, redisstore.WithPrefix("myapp:"))
//	defer store.Close()
//	limiter, err := core.NewLimiter(store,
//		core.WithFallback(memoryStore, instances))
//
// # Decisions
//
// Every algorithm of package core runs in Redis as a Lua script. The
// scripts mirror core's integer math step for step, so that a decision here
// is field for field the decision store/memory makes for the same requests
// at the same times; the conformance suite and randomized differential
// tests against store/memory prove it, one request at a time and in
// batches. The Lua is in lua/: a prelude, one file per algorithm, and a
// driver, assembled into one script per algorithm (used whenever all the
// layers of a call share an algorithm) and a generic one; a lone Take under
// GCRA or a token bucket has a hand-inlined script of its own. Scripts are
// sent as EVALSHA, and as EVAL once per server when it answers NOSCRIPT
// (after a restart or SCRIPT FLUSH); Preload sends them all up front.
//
// # Batches
//
// Decisions wait in a queue, and a few lanes send them: whenever a lane is
// free it takes every decision waiting, up to WithBatch (default 64), and
// sends them in one script call, which applies them in the order they came,
// each on the state the ones before it left: batching changes no decision,
// only the number of round trips, and Redis runs one script for many
// decisions. A batch of lone Takes under one of GCRA and the token bucket,
// the common batch, has a script of its own that reads each key once and
// writes it once, however often the batch repeats it (a hot key). Nothing
// waits on a timer: under load batches grow by themselves, since decisions
// pile up while the lanes are busy. When nothing waits and every lane is
// idle (one caller), a caller sends its decision itself, on its own
// goroutine, rather than hand it to a lane and be handed the result back,
// which cost two goroutine switches a decision; it gives up at its
// deadline as it would waiting for a lane, but that closes its connection,
// so after any failure of such a call, for a second, every decision goes by
// a lane. WithConns (default 2) sets how many round trips are in flight at
// once. While Redis is slow, a decision that finds every lane busy for a
// quarter of the timeout gets an extra lane (up to four times WithConns),
// so that it does not wait a whole round trip for one. WithBatch(1) sends
// each decision in a script call of its own; on one server the calls of the
// decisions waiting for a lane go pipelined in one round trip, up to 64, so
// that two connections carry as many calls at once as a pool of a
// connection per caller, and Redis reads and writes them in one go.
//
// # Connections
//
// The store makes connections of its own from the client's options (the
// same servers, credentials, TLS and dialer), with the settings rate
// limiting needs, whatever the client's are:
//
//   - No retries. go-redis re-sends a command whose reply was lost, and a
//     script that ran already would take its units twice. A lost reply is a
//     failed call instead. (A Cluster's redirects, MOVED and ASK, are
//     followed: a redirected script did not run.)
//   - Every read, write and dial is bounded by WithConnTimeout (default:
//     the larger of 1s and 8 times the timeout), not by a caller's deadline.
//   - At most WithConns connections a server in steady use (four times as
//     many while Redis is slow).
//   - A restarted server is in use again within milliseconds of listening:
//     while the store waits for it, refused dials are retried every 10ms,
//     and go-redis never stops dialing (it does after PoolSize failed
//     dials, then probes once a second).
//   - A dial to a server that a dial lately got no answer from (a
//     partition) is tried again with a fresh handshake after 250ms, then
//     500ms..., within the connection timeout, rather than wait for the
//     kernel to resend a lost SYN a second later.
//
// With a Sentinel failover client, the store also follows a new master
// that the old one outlives (see "High availability").
//
// So the client's MaxRetries, ContextTimeoutEnabled, timeouts and pool size
// do not matter to the store, nor does what belongs to one client: its
// client-side cache and push-notification processor, and MaxActiveConns; the client itself is not used for decisions,
// and stays the caller's to use and close. A client of another kind than
// the three above is used as it is. Close the store to close its
// connections.
//
// # Deadlines and outages
//
// A caller waits for its decision until WithTimeout (default 50ms), or its
// context's deadline if earlier, and then gets a *core.StoreError wrapping
// context.DeadlineExceeded: its limiter applies its failure mode (fail
// open, fail closed, or a fallback store) and tells its observer. The call
// itself goes on: the batch it is in is never cut short, and its connection
// is never closed for it (but for a decision its caller sent itself, at
// one caller: see "Batches"; one connection a second at most). A connection closed at every missed deadline
// would cost the next call a new connection and its handshake, which a slow
// Redis makes slower still, until no call meets its deadline at all: with
// this design a Redis answering within 60% of the deadline serves more than
// 95% of calls in time, on the connections it has (TestSlowRedis). Callers
// share deadlines in spans of a sixteenth of the timeout, one timer for
// many calls.
//
// What a call that missed its deadline may have charged: if it was still
// waiting for a lane, nothing (it is dropped unsent); if it was on its way,
// Redis applies it when the script runs, so its units are taken in Redis
// although its caller got the failure mode's decision. With a fallback
// store, that request is taken from the fallback too: it counts against
// both, never against neither.
//
// When a round trip fails for want of a connection, the store asks Redis
// whether it still answers: a reply later than the connection timeout
// (a loaded Redis, a stalled machine) fails its round trip, not the store.
// Only on evidence that Redis is gone, a refused dial or a PING unanswered
// within the connection timeout too (Redis killed, a network cut, a hung
// server), does the store go down: the batches
// waiting for a connection are cut short (a batch is never sent once its
// callers stopped waiting for an outage to end), the decisions queued fail,
// and new ones fail at once instead of waiting out their deadline, until
// Redis answers a PING again (any answer: a PING refused by an ACL will
// do); TestOutage measures decisions coming from Redis again within a few
// milliseconds of it answering, after kills and restarts and after
// SIGSTOP and SIGCONT. A hung server (SIGSTOP) fails every caller at its
// deadline until then. TestLateRepliesAreNotAnOutage holds the store up
// through replies late past the connection timeout while PING is answered:
// no call fails at once (a store that went down on the first such reply
// failed 184,056 calls at once in that test). On a Cluster or a Ring the
// store does not go down as a whole: each call fails alone. On a Cluster,
// operations are sent by the masters their keys are on, each set of
// masters in batches of its own, so that a hung or partitioned master holds
// up only the calls that need it (TestClusterHungMaster; see
// store/redis/FAULTS.md).
//
// # High availability
//
// The store runs on all four of go-redis's deployments. What each promises
// through the failure of a server:
//
//   - Single node (*goredis.Client): no failover. While the server is
//     down, calls fail at once (see above) and get their limiter's failure
//     mode; decisions come from Redis again within milliseconds of it
//     answering. A restarted server without persistence has forgotten
//     every key: each starts full, so each may admit up to one burst more.
//   - Sentinel (the *goredis.Client of goredis.NewFailoverClient):
//     supported. The store's connections find the master as the client's
//     do, asking a sentinel at every dial, so they follow a failover by
//     themselves: while the master is down calls fail at once; once the
//     sentinels name the promoted replica (up to a second, their INFO
//     period, after its promotion) the next ping's dial reaches it and
//     decisions resume. TestSentinelFailover kills the master under load
//     (down-after-milliseconds 1000): decisions resumed 0.8 to 0.95s after
//     the promotion, 2.25 to 2.4s after the kill, and were exact after. A
//     manual failover (SENTINEL FAILOVER) or a partition leaves the old
//     master up, a master until the sentinels demote it (10s later in the
//     test); takes made on it meanwhile are lost when it resyncs. So every
//     second the store asks the client's dialer which master it reaches,
//     and closes its connections to any other (go-redis's own client does
//     so on the sentinels' +switch-master, which reaches only its pool):
//     in the test, decisions moved to the promoted master 0.33s after the
//     sentinels named it, rather than 10.2s. That check costs a sentinel
//     query and a connection opened and closed, each second. The store's
//     dials go through the client's sentinel discovery: close the store
//     before the client.
//     (goredis.NewFailoverClusterClient returns a *ClusterClient, served as
//     a one-master Cluster, below.)
//   - Cluster (*goredis.ClusterClient): supported, slot by slot. While a
//     master is down, calls on its slots fail (a refused dial) and the
//     others are decided, but while the cluster itself refuses (CLUSTERDOWN:
//     with cluster-require-full-coverage, the default, on every slot, from
//     the moment the master is marked failed until its replica takes over).
//     The store's connections reload the slot map on evidence it is stale
//     (a refused dial, a lost connection, a timeout, MOVED, CLUSTERDOWN,
//     READONLY), one reload asked for per 100ms at most and one in flight,
//     rather than only every ClusterStateReloadInterval (60s by default;
//     and a dead master answers no MOVED): decisions on the failed slots
//     resume within milliseconds of the cluster reporting ok.
//     TestClusterFailover kills one of three masters (a replica each,
//     cluster-node-timeout 1000) under load: every node reported ok 2.4 to
//     3.0s after the kill, decisions on the failed slots came between 0.2s
//     before and 0.14s after that (2.3 to 2.85s after the kill: the store
//     reloads as soon as one node has the new map), and were exact after.
//   - Ring (*goredis.Ring): supported, without failover. A shard's keys
//     fail while it is down; once go-redis's heartbeat marks it down (three
//     failed pings, 500ms apart by default) they hash to the other shards
//     and start there full, and they go back to their old state when it
//     returns: each such move may admit up to one burst more per key.
//
// What a failover may lose. Redis replicates asynchronously: a replica
// promoted before it received the master's last writes never applies
// them, and the takes they held are forgotten. They are the takes Redis
// acknowledged within the replication lag before the master died (the
// replica's master_repl_offset behind the master's: well under a
// millisecond on a healthy network; at most min-replicas-max-lag seconds
// if the master is configured with min-replicas-to-write 1, which makes it
// refuse writes when no replica is that close). On one key they are at most
// the units admitted on it within that lag, which its policy bounds (under
// a token bucket or GCRA by Burst + Quota × lag / Period; a window may
// admit up to two quotas across its boundary): a key may admit that much
// more after the failover, once. Decisions after it are exact on the promoted state. Calls
// that failed during the failover took nothing (they never reached a
// server, or reached the dead one), but for those on their way when the
// master died, which it may or may not have applied and replicated.
//
// # Bounded degradation
//
// A fleet whose instances each fall back to a whole local limit admits a
// whole limit per instance while Redis is down. core.WithFallback(fallback, n)
// gives each instance's fallback one nth of every limit (core.Policy.Share),
// so that the fleet admits about one limit; its documentation states the
// bound, and TestFleetOutageBound holds four instances to it while Redis is
// killed and stopped, and to the exact limit again after.
//
// # Keys
//
// The state of key k under policy p is at
//
//	<prefix>{<k>}<p.Name()>:<p.Fingerprint() as 16 hex digits>
//
// stable across processes and deployments; a changed policy (another quota,
// period, burst or algorithm) has another fingerprint, so it starts afresh
// rather than misreading old state. The braces are the Redis Cluster hash
// tag: the user key alone, so that every policy's state of one key (a
// client's per-IP and login limits) is in one slot, and a layered request
// on them is one script call. User keys may hold any bytes: '}' is escaped
// as "%7D" and '%' as "%25", so the tag always spans the whole user key;
// the empty key is "%". The prefix (default DefaultPrefix) may not contain
// braces.
//
// Versions before this layout tagged keys by policy and key
// ("{<name>:<fingerprint>:<key>}"). Their keys are not read: on upgrade
// every key starts full once, and while old and new instances run side by
// side each counts apart. The old keys expire by themselves when full.
//
// The state is a string of integers ("tokens:last" for the token bucket,
// "tat" for GCRA and the leaky queue, "level:last" for the leaky bucket,
// "end:count" for the fixed window, "end:curr:prev" for the sliding
// counter); the sliding log
// is a list of "at:cost" entries in insertion order followed by their total.
// The log is trimmed on every call and, as in core, holds at most Quota
// entries (a charge beyond them merges into the newest).
//
// # Expiry
//
// Every key expires when its state is back to full, so that nothing
// lingers: the decision's ResetAfter for the bucket algorithms (the leaky
// queue's: when its queue has drained) and the fixed window, the moment the newest entry leaves the window for the
// sliding log, and the moment the weighted estimate reaches zero for good
// for the sliding counter. The TTL is set in milliseconds, rounded up. A
// call that leaves a state full deletes its key. Forgetting a full state
// changes no decision.
//
// # Time
//
// By default the scripts read the Redis server's TIME, in microseconds, so
// that app instances whose clocks disagree still agree on every limit; a
// batch has one time. WithClock uses the caller's clock instead (tests use
// a sluicetest.ManualClock), each decision its own; TTLs are then reckoned in that
// clock's time plus a grace (WithTTLGrace, DefaultClockGrace by default),
// so that a key never expires before its state is full in the clock's
// terms, even when the clock runs behind Redis's or, in a test, barely
// moves.
//
// # Layered limits and Redis Cluster
//
// TakeAll decides several layers (IP, user, route...) as one: either all
// take or none does, and the layers that would have passed report their
// standing without the request. When every key falls in one slot (always on
// one server; on a Cluster, layers keyed alike) one script decides every
// layer, exactly as store/memory does.
//
// On a Cluster the operations waiting for the same masters make a batch,
// grouped by slot, one script call per slot, all in one pipelined round
// trip (one request per node, in parallel). A layered
// request whose keys fall in several slots is split into a part per slot,
// and if a part is denied, a second round trip, on that path only, gives
// back what the other parts took and replays core's order where it matters
// (the layers after the first denial only peek). Decisions are then
// identical to the single server's. The cost of this is a brief window, one
// round trip long, in which units taken for a request that is eventually
// denied are visible to other requests on those keys (in its batch, or
// elsewhere): such a request may be denied, or see fewer Remaining, though
// the units are given back a moment later. A Ring shards by hash tag and is
// grouped by tag. If a refund fails (a node went away), its units stay
// taken until the key's TTL, the request is still reported denied, and the
// store logs it (WithLogger).
//
// # Leaky queues
//
// Under a core.LeakyQueue policy Redis hands out the turns: a grant's
// core.Decision.Delay comes back from the script with it, and the caller
// waits (core.Limiter.TakeTurn), so no connection or script waits for anyone.
// A waiter that gives up gives its turn back (Store.ReturnTurn): a gap
// the next request fills, released at that very instant. Every
// path decides a queue as store/memory does: single, batched, layered, on a
// Cluster or a Ring. A queue cannot be split or leased (see WithSplit,
// WithLease).
//
// # Hot keys
//
// Two options take one key's load off Redis, each for policies named in
// it: WithSplit spreads a key over several keys on different slots, each
// holding a share of the limit; WithLease has each instance take a slice of
// a key's budget at once and spend it at memory speed. Each states the
// error it costs.
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
// 2^53, and so do its bounds on costs (storekit.MaxCost) and debt
// (storekit.MaxDebt, storekit.MaxWindowCount), which every store checks alike. An
// error reply from Redis reaches callers as its error code alone
// ("redisstore: script call refused: OOM"), never the script's text.
//
// # What the tests hold it to
//
//   - Decisions: the conformance suite, a randomized differential test
//     (10,000 steps per algorithm against store/memory) and a batched one
//     (random batches of takes, layered takes, adjustments and resets, each
//     at its own time), field for field, on one server, on a 3-master
//     Cluster and on a Ring.
//   - No retries: TestNoRetries loses a reply behind a proxy and finds the
//     units taken once.
//   - Outages: TestOutage kills and restarts a private redis-server five
//     times, and stops (SIGSTOP) and resumes it five times, under load
//     through fail-open, fail-closed and fallback limiters, and holds each
//     recovery to a second from the server answering PING, give or take the
//     scheduling delay it measures alongside. In five runs (50 recoveries)
//     decisions came from Redis again 1.0–5.8 ms after the server answered.
//   - The fleet's bound (core.WithFallback): n instances' fallbacks
//     admit at most n×(Burst/n + 1) + Rate×T units in an outage of length T
//     (window algorithms: n×max(Quota/n, 1) per window). TestFleetOutageBound
//     runs four instances with clocks that do not move.
//   - Leases: over any span the fleet admits at most what the limit allows
//     over that span plus instances × size, and while Redis is down an
//     instance spends only what it holds; TestLeaseOvershoot measures the
//     overshoot over windows of 10 ms to 1 s on four instances.
//   - Split keys never admit more than the limit; a request can be denied
//     while other shards hold up to n−1 shares. TestSplit drains a split
//     limit from four instances to exactly the limit.
//
// # Performance
//
// Against a private redis-server on the same two cores as the benchmark (and
// other work: load average 2.2–4.7), five interleaved rounds against the
// previous version, medians (ranges). The floor is one EVALSHA of
// "return 1" per decision through a plain go-redis client with a
// connection per caller; sluice is this store behind a Limiter, GCRA of 100
// a second, burst 100: on one hot key nearly every decision is a denial, on
// 100,000 keys every one admits. redis-µs is INFO commandstats' usec of
// EVALSHA and EVAL per decision: the server's own time.
//
//	cd benchmarks && go test -c -o new.test . # and old.test from the old tree
//	for i in 1 2 3 4 5; do for b in old new; do
//	  REDIS_ADDR=127.0.0.1:6391 ./$b.test -test.run '^$' -test.benchtime 20000x \
//	    -test.bench 'BenchmarkRedis/callers/keys/lib=(sluice|floor)$'
//	done; done
//
//	                        decisions/s ÷ floor             redis-µs/decision
//	                        before        now               sluice now (before)   floor
//	1 key,  1 caller        0.45          0.60 (0.38–1.96)  9.4 (9.9)             2.0
//	1 key,  64 callers      2.98          5.07 (3.53–6.21)  2.0 (4.5)             2.1
//	1 key,  256 callers     5.21          6.69 (5.46–10.87) 1.6 (3.7)             2.0
//	100k,   1 caller        0.44          0.77 (0.56–1.12)  10.4 (33)             2.0
//	100k,   64 callers      1.99          2.45 (1.64–2.85)  6.9 (8.3)             1.6
//	100k,   256 callers     2.82          4.43 (2.98–4.87)  5.3 (8.4)             1.7
//
// At one caller, sluice ÷ floor (medians of the rounds' ratios): p50 1.22
// (hot) and 1.24 (100k keys), before 2.9; p90 1.84 and 1.21; p99 1.46 and
// 1.20, before 1.7. The store alone, without a Limiter (BenchmarkModes,
// callers=1, floor against batched, every decision admitted, five
// interleaved rounds): p50 1.30× the floor's (1.13–1.43; before 2.83), p99
// 0.67× (0.22–0.97; before 1.41). What is left of the p50 gap is mostly
// the script's own time in Redis (TIME, GET, SET, a reply of four
// integers: 7 to 8 µs more than "return 1" per call on this machine); the
// two goroutine switches a decision cost before (futex and usleep were 12%
// of the store's CPU profile at one caller) are gone.
//
// Where the time goes at 64 callers (TestCPUPerDecision, CPU time of each
// process per decision): on 100,000 keys the Redis server spends 7.8 µs a
// decision (the floor 12.5), 5 to 7 of them in the script, most of that
// the GET and the SET with expiry of a key Redis has not seen; the client
// 6.3 µs (the floor 21.7). One Redis core can do 1e6 / 7.8, about 128,000
// such decisions a second; on two cores shared with the client, 57,000 to
// 81,000 were made. On the hot key the server spends 2.2 µs and the client
// 3.0 a decision. The floor is bound by a round trip per decision, and by
// the same two cores.
//
// WithBatch(1) against the floor, in the same rounds (BenchmarkUnbatched,
// one hot key, every decision admitted): 0.83× the floor's decisions at one
// caller, 2.29× (before 0.60×) at 64 and 3.59× (0.73×) at 256, one script
// call per decision, pipelined.
//
// Through an outage (BenchmarkOutage, measured before these figures; the
// outage path is unchanged), the units admitted beyond what the limit
// allows were −100 unbatched, −52 batched, −1,100 leased and −30 split.
// BenchmarkOutage has four instances hammer one key limited to 1,000/s (burst
// 100), each with a memory fallback on a quarter of the limit, Redis is
// killed for a second, and the units admitted meanwhile, less the 1,100
// the limit allows in a second from full, are reported; negative is under
// the limit. Other libraries on Redis are timed in benchmarks/.
package redisstore
