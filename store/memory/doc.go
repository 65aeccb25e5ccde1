// Package memory is sluice's embedded store: per-key rate-limit state kept in
// this process, sharded so that no lock is global, and bounded so that a flood
// of distinct keys cannot exhaust memory.
//
// Keys are reduced to a 64-bit hash seeded per Store (hash/maphash), so the
// store keeps no key bytes: collisions are negligible and, the seed being
// secret, cannot be forged. State lives in 256 shards: each policy has an
// open-addressed table in each, of 16 bytes a key for GCRA, whose state is
// one word, and 24 for the other algorithms; each shard has a mutex.
//
// Taking from a key the store already holds, the hot path, locks only that
// key's slot, or for a one-word state no lock at all (a compare-and-swap of
// the state, none for a denial), so cores working on different keys write no
// memory in common:
// a shared lock would move between them on every other request and cost more
// than the rest of the work. Everything that changes which keys exist (a new
// key, a table growing, an eviction, the sweep) holds the shard's mutex. A
// key that cores fight over is served under the mutex too, whose waiters
// sleep rather than take the key's memory back and forth.
//
// Bounding is generational, an approximation of least-recently-used eviction
// that costs no memory per key: each table has a young and an old generation;
// a key found in the old one moves to the young one; when a shard's young
// generation has taken in half the shard's share of MaxKeys, the old one is
// dropped whole and the young one becomes old. A key is therefore kept as long
// as it was used within the last half-share of new keys in its shard, and a
// shard never holds more than its share. A background sweep (ending with the
// store, or at Close) also drops state that is back to full, which changes no
// decision.
//
// Dropping a key that is not full (an eviction) forgets what it had taken:
// size MaxKeys above the number of keys that are active within a period.
//
// # Slots
//
// Each slot is a word that says which key it holds and whether it is
// locked, then the state. Taking from a key the store holds walks the
// store's list of policies to the key's shard's table, finds the slot
// without locking anything, and locks that slot alone with one
// compare-and-swap. A one-word state (GCRA) is not even
// locked: the hot path reads it, decides, and swaps the new state in, which
// fails, and is tried again, if anything changed the state meanwhile. A
// denial writes nothing, so a key over its limit costs its cores no atomic
// operation, and its cache line stays shared between them.
//
//   - Anything that holds a slot (a table growing, the sweep, TakeAll, the
//     locked path) locks its word and swaps a one-word state for poison, a
//     value no state takes, which makes a concurrent swap fail; a slot
//     dropped or moved keeps it, so no late swap lands there.
//   - A table grows by copying each slot while holding it and marking the
//     old slot moved. A hot path that finds its slot moved retries under the
//     mutex, so no take is lost to a copy. TestRebuildRacesTheHotPath fails
//     when the copy does not hold the slot, for the token bucket and for
//     GCRA; TestSwapNeverLandsInAHeldSlot fails without the poison check.
//   - When two cores fight over one key, the hot path marks the slot
//     contended, and requests for it go through the shard mutex, whose
//     waiters sleep: one core then serves request after request from its own
//     cache, instead of the key's cache line crossing between cores on each
//     request. The mark lasts until the next sweep.
//   - TakeAll locks its shards in ascending order, then holds the slots of
//     its keys, so the hot path cannot change them. It takes from copies of
//     the states and writes them back only when every layer allowed the
//     request.
//   - Sliding logs, whose state is a whole list of timestamps, are kept
//     under the shard mutex.
//
// A decision is written in place from the algorithm to the store's result
// (storekit.TakeTo, under the table's storekit.Spec, read from the policy
// once) and copied once through the core.Store interface: Go keeps a
// Decision in memory inside a function, and every copy of one just written
// stalls its loads. The store finds a key through one table per policy,
// holding each shard's slots, so the cache lines it reads on the way are
// the same for every key and stay cached. A decision reads the clock once
// and allocates nothing.
//
// # Bounds
//
// The store holds at most WithMaxKeys keys (default 2^20). A flood of 1M
// distinct keys into a store capped at 100k keeps at most 100k keys, the
// heap stays proportional to the cap, and a key in steady use keeps its
// state (TestFloodStaysBounded).
//
// # Performance
//
// The store's own benchmarks compare the algorithms, every policy 100/s
// with a burst of 100, the 100k keys visited from 2 goroutines in a
// scattered order (BenchmarkManyKeysParallel); ns/op, the median of five
// rounds on the project's shared 2-core VM (load average 1.9–2.9), 0
// allocs/op in every row:
//
//	for i in 1 2 3 4 5; do
//	  go test ./store/memory -run '^$' -bench 'HotKey|ManyKeys' -benchmem -count 1
//	done > bench.txt
//	benchstat bench.txt
//	go test ./store/memory -run '^$' -bench HeapPerKey -benchtime 1x
//
//	workload                      token   GCRA   leaky   fixed   sliding  sliding  leaky
//	                              bucket         bucket  window  log      counter  queue
//	one hot key, sequential        63.2   53.2    64.5    62.7    92.7     91.5    65.5
//	one hot key, 2 goroutines      84.5   23.4    88.8    96.3   102.6    119.5    89.0
//	100k keys, 2 goroutines       189.0  169.8   194.9   180.1   432.8    193.8   179.2
//	heap per idle key, 1M keys    50.4B  33.6B   50.4B   50.4B   101.8B   50.4B   50.4B
//
// GCRA keeps a single time per key (16 bytes a slot), and a hot key over
// its limit is read, never written, so two cores share its cache line; the
// leaky queue keeps the turns given back beside its time (24 bytes). The
// sliding log's logs are still growing during the 100k-key run; the sliding
// counter pays for an exact RetryAfter on every denial, and a hot key at
// 100/s is denied almost every time. The heap figure includes the key bytes
// of the benchmark; the store keeps none, only a 64-bit hash per key, in
// tables at most three-quarters full.
//
// The 100k-key rounds were bimodal: one ran at about 80 ns for every
// algorithm but the log, the others at 170–200. On that VM a decision on
// one of 100k keys costs several times one on a hot key: its slot is
// wherever its hash puts it, so each decision reads a cache line, and a
// page, that no recent decision read, and the VM's page walks are slow.
// Its clock is slow too: one read of the monotonic clock (time.Since),
// about 30 ns, is half of a hot-key decision; time.Now reads two clocks.
// The figures move with the machine's load: at load 7–10 the same runs
// took two to four times as long, a run of two goroutines often getting
// one core, so compare only within interleaved rounds.
//
// Other libraries are timed in the benchmarks module (benchmarks/), so that
// none enters sluice's dependencies: BenchmarkMemory there times sluice,
// this store alone and five peers on one hot key and on 100k keys visited
// in both orders, with the keys made before the timer or inside it, and
// reports each run's CPU time beside its wall time (cpu-ns/op).
package memory
