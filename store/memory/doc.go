// Package memory is sluice's embedded store: per-key rate-limit state kept in
// this process, sharded so that no lock is global, and bounded so that a flood
// of distinct keys cannot exhaust memory.
//
// Keys are reduced to a 64-bit hash seeded per Store (hash/maphash), so the
// store keeps no key bytes: collisions are negligible and, the seed being
// secret, cannot be forged. State lives in 256 shards: each policy has an
// open-addressed table in each, of 16 bytes a key for GCRA and the leaky
// queue, whose state is one word, and 24 for the other algorithms; each
// shard has a mutex.
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
// compare-and-swap. A one-word state (GCRA, the leaky queue) is not even
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
// One run on the project's shared 2-core VM, eight interleaved rounds
// (load average 1.3–2.1), every policy 100/s with a burst of 100, the 100k
// keys visited in a scattered order, as real clients arrive
// (BenchmarkManyKeysParallel); ns/op, median of 8, 0 allocs/op in every
// row:
//
//	for i in 1 2 3 4 5 6 7 8; do
//	  go test ./store/memory -run '^$' -bench 'HotKey|ManyKeys' -benchmem -count 1
//	done > bench.txt
//	benchstat bench.txt
//	go test ./store/memory -run '^$' -bench HeapPerKey -benchtime 1x
//
//	workload                      token   GCRA   leaky   fixed   sliding  sliding  leaky
//	                              bucket         bucket  window  log      counter  queue
//	one hot key, sequential        63.2   52.9    62.9    63.4    88.0     89.9    53.8
//	one hot key, 2 goroutines      95.4   24.5   102.5   102.5   109.7    123.2    25.4
//	100k keys, 2 goroutines       187.1  157.6   173.9   183.1   444.0    191.1   169.2
//	heap per idle key, 1M keys    50.4B  33.6B   50.4B   50.4B   101.7B   50.4B   33.6B
//
// GCRA and the leaky queue keep a single time per key (16 bytes a slot),
// and a hot key over its limit is read, never written, so two cores share
// its cache line. The sliding log's logs are still growing during the
// 100k-key run (43 B/op on average); the sliding counter pays for an exact
// RetryAfter on every denial, and a hot key at 100/s is denied almost every
// time. The heap figure includes the key bytes of the benchmark; the store
// keeps none, only a 64-bit hash per key, in tables at most three-quarters
// full. Before the per-slot locks, every decision locked its shard's mutex,
// and that store was 9–17% slower than one x/time/rate limiter per key in a
// sync.Map over 100k keys on two cores: the mutex's cache line moved
// between the cores on every other request. Other libraries are timed in
// the benchmarks module (benchmarks/), so that none enters sluice's
// dependencies.
//
// Against the fastest peer of each of two full runs of benchmarks/ (cd
// benchmarks && ./run.sh), on 949afff before the slots and the one-word
// swap (load 4.2–7.8) and on 346ad16 after them (load 1.5–2.1), sluice's
// time went from 1.30 to 0.77 of the fastest peer's on one hot key, from
// 1.28 to 0.72 on one hot key from 2 goroutines, and from 0.79 to 0.65 on
// 100k keys from 2 goroutines; the heap per key at 1M keys from 50.5 B to
// 33.6 B (0.25 of go-limiter's).
//
// The 100k-key benchmark visits its keys in a scattered order: visited in
// the order they were made, limiters allocated in that order were read from
// memory the prefetcher had streamed in, which a quiet machine rewards and
// a busy one does not, and rounds disagreed with each other.
package memory
