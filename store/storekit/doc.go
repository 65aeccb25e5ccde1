// Package storekit is what a store author builds a core.Store from: the
// per-key state (State, or a Log for the sliding-window log), the algorithms
// that decide on it, and the checks every store makes before touching it.
//
// Every algorithm is written once here, as pure functions over a small State
// with the current time passed in as integer microseconds since the Unix
// epoch. Stores call these functions under their own synchronisation (the
// memory store under a lock per key); the Redis store mirrors them in Lua,
// and the conformance suite in store/storetest proves the two agree.
//
// Time is kept in whole microseconds because the Redis store's scripts run on
// Lua numbers (IEEE doubles), which hold integers exactly only up to 2^53:
// microseconds since 1970 fit with centuries to spare, nanoseconds do not.
package storekit
