package redisstore

import (
	"hash/maphash"
	"strings"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
)

const denyShards = 16

// denyCache remembers denials Redis made, so that the same request on the
// same key is denied locally until its RetryAfter has passed. See
// WithDenyCache for when that is exact.
type denyCache struct {
	seed   maphash.Seed
	per    int // entries per shard
	shards [denyShards]denyShard
}

type denyShard struct {
	mu sync.Mutex
	m  map[denyKey]denyEntry
	_  [40]byte
}

type denyKey struct {
	fp  uint64
	key string
}

type denyEntry struct {
	cost int64
	at   time.Time     // when the request that was denied was sent
	d    core.Decision // without its Policy
}

func newDenyCache(maxKeys int) *denyCache {
	c := &denyCache{seed: maphash.MakeSeed(), per: max(maxKeys/denyShards, 1)}
	for i := range c.shards {
		c.shards[i].m = make(map[denyKey]denyEntry)
	}
	return c
}

func (c *denyCache) shard(key string) *denyShard {
	return &c.shards[maphash.String(c.seed, key)%denyShards]
}

// get returns the remembered denial of cost units from key under the policy
// fp, its times shortened by the time elapsed since, if it still holds.
func (c *denyCache) get(fp uint64, key string, cost int64, now time.Time) (core.Decision, bool) {
	sh := c.shard(key)
	k := denyKey{fp, key}
	sh.mu.Lock()
	e, ok := sh.m[k]
	if !ok {
		sh.mu.Unlock()
		return core.Decision{}, false
	}
	elapsed := now.Sub(e.at).Truncate(time.Microsecond)
	if elapsed < 0 || elapsed >= e.d.RetryAfter {
		delete(sh.m, k)
		sh.mu.Unlock()
		return core.Decision{}, false
	}
	sh.mu.Unlock()
	if e.cost != cost {
		return core.Decision{}, false
	}
	d := e.d
	d.RetryAfter -= elapsed
	d.ResetAfter = max(d.ResetAfter-elapsed, 0)
	return d, true
}

// put remembers a denial made for a request sent at at.
func (c *denyCache) put(fp uint64, key string, cost int64, d core.Decision, at time.Time) {
	if d.Allowed || d.Impossible || d.RetryAfter <= 0 {
		return
	}
	d.Policy = nil
	sh := c.shard(key)
	k := denyKey{fp, key}
	sh.mu.Lock()
	if _, ok := sh.m[k]; !ok {
		if len(sh.m) >= c.per {
			sh.evict(at)
		}
		k.key = strings.Clone(key) // the caller's may share memory (see core.Request)
	}
	sh.m[k] = denyEntry{cost: cost, at: at, d: d}
	sh.mu.Unlock()
}

// evict makes room for one entry: it drops the expired entries among a few
// visited in the map's random order, or the first visited if none was.
func (sh *denyShard) evict(now time.Time) {
	const visits = 8
	n, dropped := 0, false
	var first denyKey
	for k, e := range sh.m {
		if n == 0 {
			first = k
		}
		if now.Sub(e.at) >= e.d.RetryAfter {
			delete(sh.m, k)
			dropped = true
		}
		if n++; n == visits {
			break
		}
	}
	if !dropped {
		delete(sh.m, first)
	}
}

// forget drops what is remembered of key under the policy fp: a local refund
// or reset makes it stale.
func (c *denyCache) forget(fp uint64, key string) {
	sh := c.shard(key)
	sh.mu.Lock()
	delete(sh.m, denyKey{fp, key})
	sh.mu.Unlock()
}

// len returns the number of entries held.
func (c *denyCache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// localNow is the deny cache's time.
func (s *Store) localNow() time.Time {
	if s.clock != nil {
		return s.clock.Now()
	}
	return time.Now()
}
