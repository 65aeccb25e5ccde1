package backpressure

import (
	"time"
)

// keyRetryAfter is retryAfter for one key's work.
func (l *Limiter) keyRetryAfter(k *keyEntry) time.Duration {
	return l.drain(k.inFlight+k.waiting, l.perKey)
}

// keyEntry counts one key's requests. It exists while the key has some in
// flight or waiting.
type keyEntry struct {
	hash              uint64
	inFlight, waiting int
	fair              *tenant // with Config.Fair
}

func (l *Limiter) newKey(h uint64) *keyEntry {
	var k *keyEntry
	if n := len(l.freeKeys); n > 0 {
		k = l.freeKeys[n-1]
		l.freeKeys = l.freeKeys[:n-1]
	} else {
		k = new(keyEntry)
	}
	k.hash = h
	l.keys[h] = k
	if l.fair != nil {
		l.fair.join(k)
	}
	return k
}

// keyAdmitted counts a request of k admitted: with Config.Fair, a key
// that reaches its per-key limit leaves the schedules.
func (l *Limiter) keyAdmitted(k *keyEntry) {
	if k == nil {
		return
	}
	k.inFlight++
	if l.fair != nil && l.keyFull(k) {
		l.fair.park(k)
	}
}

// keyFreed counts a request of k completed: a key back under its
// per-key limit rejoins the schedules.
func (l *Limiter) keyFreed(k *keyEntry) {
	if k == nil {
		return
	}
	k.inFlight--
	if l.fair != nil && l.perKey > 0 && k.inFlight == l.perKey-1 {
		l.fair.unpark(k, l.credit())
	}
}

// dropIfIdle forgets k once it has nothing in flight or waiting.
func (l *Limiter) dropIfIdle(k *keyEntry) {
	if k == nil || k.inFlight > 0 || k.waiting > 0 {
		return
	}
	delete(l.keys, k.hash)
	if l.fair != nil {
		l.fair.leave(k)
	}
	if len(l.freeKeys) < maxFree {
		l.freeKeys = append(l.freeKeys, k)
	}
}
