// Package memory is sluice's embedded store: per-key rate-limit state kept in
// this process, for one instance, or as a fleet's fallback while its shared
// store is down (core.WithFallback).
//
//	store, err := memory.New(memory.WithMaxKeys(100_000))
//	...
//	limiter, err := core.NewLimiter(store)
//
// The store is bounded: it holds at most WithMaxKeys keys (default 2^20),
// evicting by an approximation of least recently used, so that a flood of
// distinct keys cannot exhaust memory; an evicted key that was not full
// forgets what it had taken, so size the bound above the keys active within
// a period. Keys are kept as 64-bit hashes under a secret per-store seed,
// never as bytes. State is sharded so that no lock is global: a decision on
// a key the store holds locks that key alone (GCRA's not at all), reads the
// clock once and allocates nothing.
//
// The slots, the eviction scheme and the store's own benchmark figures are in
// docs/memory.md.
package memory
