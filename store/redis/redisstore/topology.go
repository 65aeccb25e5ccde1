package redisstore

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// A Cluster's slot map goes stale when a master fails over: its replica
// serves its slots, and go-redis goes on sending them to the dead master.
// go-redis reloads the map on a MOVED reply and every
// ClusterStateReloadInterval (60s by default), but a dead master answers
// nothing, so no MOVED ever comes: until the next periodic reload, every
// call on its slots fails. The store's own ClusterClient therefore reloads
// the map itself on evidence that it is stale: a round trip to a node that
// failed for want of a connection (a refused dial, a timeout, a connection
// lost), or a reply saying the map moved (MOVED, CLUSTERDOWN, READONLY).
//
// The reloads are bounded: at most one is asked for per reloadGap, and
// go-redis runs at most one at a time (a request made while one runs
// waits for it, then one more runs at most every 200ms). A reload asks one
// node for CLUSTER SLOTS; a dead node's refused dial costs it nothing.
const reloadGap = 100 * time.Millisecond

// topology asks the store's ClusterClient to reload its slot map.
type topology struct {
	cluster *goredis.ClusterClient // nil: nothing to reload
	last    atomic.Int64           // when a reload was last asked for, ns since start
	start   time.Time
	asked   atomic.Int64 // reloads asked for, for tests
}

func newTopology(c goredis.UniversalClient) *topology {
	cc, _ := c.(*goredis.ClusterClient)
	t := &topology{cluster: cc, start: time.Now()}
	t.last.Store(-int64(reloadGap))
	return t
}

// saw reloads the slot map if err is evidence that it is stale, and no
// reload was asked for within reloadGap.
func (t *topology) saw(err error) {
	if t.cluster == nil || !stale(err) {
		return
	}
	now := int64(time.Since(t.start))
	last := t.last.Load()
	if now-last < int64(reloadGap) || !t.last.CompareAndSwap(last, now) {
		return
	}
	t.asked.Add(1)
	t.cluster.ReloadState(context.Background())
}

// stale reports an error that says the slot map may be out of date: the
// node a slot maps to could not be reached, or says the slot is not its.
func stale(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var re goredis.Error
	if errors.As(err, &re) {
		_, moved := goredis.IsMovedError(err)
		return moved || goredis.IsClusterDownError(err) || goredis.IsReadOnlyError(err)
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded)
}
