package redisstore

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// The store sends its calls over connections of its own, made from the
// caller's client's options: the same servers, credentials, TLS and dialer,
// with the settings rate limiting needs whatever the client's are.
//
//   - No retries: go-redis re-sends a command whose reply was lost, and a
//     script that already ran would take its units twice. (A Cluster's
//     redirects are followed: a MOVED script did not run.)
//   - A Cluster's slot map is reloaded on evidence it is stale (see
//     topology), not only every ClusterStateReloadInterval.
//   - Every read, write and dial is bounded by the store's connection
//     timeout (WithConnTimeout), not by a caller's deadline: a caller stops
//     waiting at its deadline, the connection waits on.
//   - No separate pipeline pool, and a pool too large to ever fill: the
//     pipe's lanes bound the connections in use. go-redis stops dialing a
//     server after PoolSize failed dials and then probes it only once a
//     second, which would hold a restarted server unused for up to a
//     second; a pool this large never gets there.
//   - While the store waits for Redis to come back (the pipe is down), a
//     refused dial is tried again every redialInterval within the dial's
//     timeout, so that a restarted server is in use again within
//     redialInterval of listening.
//   - A dial to a server that a dial lately got no answer from (a
//     partition, a lost SYN) waits quickRedial for the handshake before it
//     tries again with a fresh one, twice as long each time, within the
//     dial's timeout: the kernel sends a lost SYN again only after a
//     second, then after three, so that decisions would resume up to a
//     connection timeout after a partition heals. A server that answers at
//     all completes a handshake at once, however busy (the kernel does it).
const (
	redialInterval = 10 * time.Millisecond
	quickRedial    = 250 * time.Millisecond
	maxRedialWait  = 8 * time.Second // an attempt's longest, for a dial without a deadline
	unfilledPool   = 1 << 16
)

// conns is the store's private client and what it counts.
type conns struct {
	client  goredis.UniversalClient
	own     bool        // client is the store's, to close with it
	waiting func() bool // whether refused dials should be tried again
	dials   atomic.Int64
	silent  sync.Map // addresses whose last dial timed out (see quickRedial)
	closed  chan struct{}
	watch   *masterWatch // a failover client's, else nil
	watcher sync.WaitGroup
}

// newConns derives the store's client from c, with reads, writes and dials
// bounded by wait, and up to dials connections dialed at once. A client of
// a kind it does not know is used as it is.
func newConns(c goredis.UniversalClient, dials int, wait time.Duration) *conns {
	cs := &conns{waiting: func() bool { return false }, closed: make(chan struct{})}
	switch c := c.(type) {
	case *goredis.Client:
		o := *c.Options()
		if o.Addr == failoverAddr && o.Dialer != nil {
			cs.watch = newMasterWatch(o.Dialer)
			o.Dialer = cs.watch.dialer()
			cs.watcher.Go(func() { cs.watch.run(cs.closed, wait) })
		}
		o.Dialer = cs.dialer(o.Dialer)
		// NewClient put the client's push-notification processor in its
		// options; a second client must make its own, and its own copy of
		// the maintenance-notification settings.
		o.PushNotificationProcessor = nil
		if o.MaintNotificationsConfig != nil {
			m := *o.MaintNotificationsConfig
			o.MaintNotificationsConfig = &m
		}
		// Scripts are not cached reads, and a cache is one client's.
		o.ClientSideCacheConfig, o.ClientSideCache = nil, nil
		o.MaxActiveConns = 0 // the lanes bound the connections
		o.MaxRetries, o.ContextTimeoutEnabled, o.DialerRetries = -1, true, 1
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = wait, wait, wait
		o.PoolSize, o.MaxConcurrentDials, o.MinIdleConns, o.PipelinePoolSize = unfilledPool, dials, 0, -1
		cs.client, cs.own = goredis.NewClient(&o), true
	case *goredis.ClusterClient:
		o := *c.Options()
		o.Dialer = cs.dialer(orDefault(o.Dialer, o.TLSConfig))
		o.MaxRetries, o.ContextTimeoutEnabled, o.DialerRetries = -1, true, 1
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = wait, wait, wait
		o.PoolSize, o.MaxConcurrentDials, o.MinIdleConns, o.PipelinePoolSize = unfilledPool, dials, 0, -1
		// A dial refused by a dead master is tried again (MaxRedirects
		// times) at once: a backoff would hold every slot's calls in the
		// round trip, the healthy masters' too.
		o.MinRetryBackoff, o.MaxRetryBackoff = -1, -1
		cc := goredis.NewClusterClient(&o)
		cc.OnNewNode(func(node *goredis.Client) { node.AddHook(slotsHook(min(wait, slotsWait))) })
		cs.client, cs.own = cc, true
	case *goredis.Ring:
		o := *c.Options()
		o.Dialer = cs.dialer(orDefault(o.Dialer, o.TLSConfig))
		o.MaxRetries, o.ContextTimeoutEnabled, o.DialerRetries = -1, true, 1
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = wait, wait, wait
		o.PoolSize, o.MinIdleConns = unfilledPool, 0
		cs.client, cs.own = goredis.NewRing(&o), true
	default:
		cs.client = c
	}
	return cs
}

// slotsWait bounds how long a reload of a Cluster's slot map waits for
// one node's answer. go-redis asks the nodes one at a time, in a random
// order, and a hung or partitioned node would hold the reload for the
// whole connection timeout, and with it the store's view of a failover
// around that node (see topology); a node that answers at all answers
// CLUSTER SLOTS at once.
const slotsWait = 250 * time.Millisecond

// slotsHook gives the CLUSTER commands of the store's Cluster nodes, which
// only reloads of the slot map send, a deadline of their own.
type slotsHook time.Duration

func (slotsHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h slotsHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if cmd.Name() != "cluster" {
			return next(ctx, cmd)
		}
		ctx, cancel := context.WithTimeout(ctx, time.Duration(h))
		defer cancel()
		return next(ctx, cmd)
	}
}

func (slotsHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// dialFunc is go-redis's dialer type.
type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// orDefault returns dial, or go-redis's default dialer (with tlsConfig) if
// dial is nil, as a Cluster or Ring node would get.
func orDefault(dial dialFunc, tlsConfig *tls.Config) dialFunc {
	if dial != nil {
		return dial
	}
	return goredis.NewDialer(&goredis.Options{TLSConfig: tlsConfig})
}

// dialer wraps dial to count dials, to try a dial to a silent server again
// with a fresh connection (see quickRedial), and, while the store waits for
// Redis, to try refused ones again until the dial's context ends.
func (cs *conns) dialer(dial dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var wait time.Duration // for one attempt; 0: the dial's whole timeout
		if _, ok := cs.silent.Load(addr); ok {
			wait = quickRedial
		}
		for {
			cs.dials.Add(1)
			conn, err := attempt(ctx, dial, network, addr, wait)
			if err == nil {
				if wait > 0 {
					cs.silent.Delete(addr)
				}
				return conn, nil
			}
			if timedOut(err) {
				cs.silent.Store(addr, struct{}{})
				if live(ctx) {
					wait = min(max(2*wait, quickRedial), maxRedialWait)
					continue
				}
			}
			if !refused(err) || !cs.waiting() {
				return conn, err
			}
			select {
			case <-ctx.Done():
				return nil, err
			case <-cs.closed:
				return nil, err
			case <-time.After(redialInterval):
			}
		}
	}
}

// attempt dials once, within wait if it is not zero.
func attempt(ctx context.Context, dial dialFunc, network, addr string, wait time.Duration) (net.Conn, error) {
	if wait == 0 {
		return dial(ctx, network, addr)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return dial(ctx, network, addr)
}

// live reports whether a dial under ctx may still be tried: ctx neither
// ended nor past its deadline. Both count: a caller's own round trip runs
// under a context that reports its deadline but never ends (see
// inlineCtx), and a dial past it fails at once.
func live(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	d, ok := ctx.Deadline()
	return !ok || time.Now().Before(d)
}

// timedOut reports a dial that got no answer in time.
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
}

// refused reports a dial error a restarting server gives: nothing listens
// yet, or the listener is not ready.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && !op.Timeout()
}

// ownCluster returns the store's client if it is a ClusterClient the store
// made, whose slot map the store may reload (see topology); else nil.
func (cs *conns) ownCluster() goredis.UniversalClient {
	if cc, ok := cs.client.(*goredis.ClusterClient); ok && cs.own {
		return cc
	}
	return nil
}

// close closes the client if it is the store's.
func (cs *conns) close() error {
	close(cs.closed)
	cs.watcher.Wait()
	if cs.own {
		return cs.client.Close()
	}
	return nil
}
