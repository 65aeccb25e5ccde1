package client

import "time"

// hostTable is a bounded map of per-host state. When full, inserting a host
// evicts the least recently used of a small random sample of entries,
// preferring idle ones (the approximate LRU Redis uses). That keeps every
// operation O(1) even when a client talks to many more hosts than it keeps.
// It is not safe for concurrent use; owners hold their own lock.
type hostTable[V any] struct {
	max  int
	m    map[string]*hostEntry[V]
	idle func(v V, now time.Time) bool // evict these first; may be nil
}

type hostEntry[V any] struct {
	v    V
	used time.Time
}

// evictionSample is how many entries an eviction looks at.
const evictionSample = 16

// DefaultMaxHosts bounds the per-host state kept by pacing and breakers.
const DefaultMaxHosts = 1024

func newHostTable[V any](maxHosts int, idle func(V, time.Time) bool) *hostTable[V] {
	if maxHosts <= 0 {
		maxHosts = DefaultMaxHosts
	}
	return &hostTable[V]{max: maxHosts, m: make(map[string]*hostEntry[V]), idle: idle}
}

// lookup returns the state of host, or ok == false.
func (t *hostTable[V]) lookup(host string, now time.Time) (v V, ok bool) {
	e, ok := t.m[host]
	if !ok {
		return v, false
	}
	e.used = now
	return e.v, true
}

// get returns the state of host, creating it with mk if needed.
func (t *hostTable[V]) get(host string, now time.Time, mk func() V) V {
	if e, ok := t.m[host]; ok {
		e.used = now
		return e.v
	}
	if len(t.m) >= t.max {
		t.evict(now)
	}
	e := &hostEntry[V]{v: mk(), used: now}
	t.m[host] = e
	return e.v
}

func (t *hostTable[V]) evict(now time.Time) {
	var victim string
	var victimUsed time.Time
	victimIdle, found, n := false, false, 0
	for k, e := range t.m { // map iteration starts at a random entry
		idle := t.idle != nil && t.idle(e.v, now)
		better := !found ||
			(idle && !victimIdle) ||
			(idle == victimIdle && e.used.Before(victimUsed))
		if better {
			victim, victimUsed, victimIdle, found = k, e.used, idle, true
		}
		if n++; n >= evictionSample {
			break
		}
	}
	if found {
		delete(t.m, victim)
	}
}

func (t *hostTable[V]) len() int { return len(t.m) }
