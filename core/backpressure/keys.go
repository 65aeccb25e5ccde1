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
	return k
}

// dropIfIdle forgets k once it has nothing in flight or waiting.
func (l *Limiter) dropIfIdle(k *keyEntry) {
	if k == nil || k.inFlight > 0 || k.waiting > 0 {
		return
	}
	delete(l.keys, k.hash)
	if len(l.freeKeys) < maxFree {
		l.freeKeys = append(l.freeKeys, k)
	}
}
