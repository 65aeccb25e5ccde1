package redisstore

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// A failover client (goredis.NewFailoverClient) finds the master by asking
// a sentinel at every dial, and drops its connections to the old master
// when the sentinels announce a new one (+switch-master). The store's
// connections are made from the client's options, dialer included, so
// they find the new master at their next dial; but the announcement only
// reaches the client's own pool. A failover that leaves the old master up
// (SENTINEL FAILOVER, a partition) would let the store go on deciding on
// it, until the sentinels demote it, and lose what it took there when it
// resyncs. So the store asks, every masterCheck, which server the dialer
// reaches, and closes its connections to any other.
const (
	failoverAddr = "FailoverClient" // the Addr of a failover client's options
	masterCheck  = time.Second
)

// masterWatch tracks the store's connections to a failover client's
// servers, and the master the dialer last reached.
type masterWatch struct {
	dial   dialFunc // the failover client's dialer
	mu     sync.Mutex
	master string
	open   map[*watchedConn]struct{}
	moved  atomic.Int64 // connections closed for a new master, for tests
}

func newMasterWatch(dial dialFunc) *masterWatch {
	return &masterWatch{dial: dial, open: map[*watchedConn]struct{}{}}
}

// dialer dials through the failover client's dialer, and tracks the
// connection.
func (w *masterWatch) dialer() dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := w.dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		wc := &watchedConn{Conn: conn, w: w, addr: conn.RemoteAddr().String()}
		w.mu.Lock()
		w.open[wc] = struct{}{}
		w.mu.Unlock()
		w.reached(wc.addr)
		return wc, nil
	}
}

// reached records that the dialer reached the master at addr, and closes
// the connections to any other server.
func (w *masterWatch) reached(addr string) {
	var stale []*watchedConn
	w.mu.Lock()
	if addr != w.master {
		w.master = addr
		for wc := range w.open {
			if wc.addr != addr {
				stale = append(stale, wc)
			}
		}
	}
	w.mu.Unlock()
	for _, wc := range stale {
		w.moved.Add(1)
		_ = wc.Close()
	}
}

// run asks every masterCheck which master the dialer reaches, until closed
// is closed. Each check is a sentinel query and a connection opened and
// closed at once, bounded by wait.
func (w *masterWatch) run(closed <-chan struct{}, wait time.Duration) {
	base, stop := context.WithCancel(context.Background())
	defer stop()
	go func() { // a check under way ends when the store closes
		select {
		case <-closed:
			stop()
		case <-base.Done():
		}
	}()
	tick := time.NewTicker(masterCheck)
	defer tick.Stop()
	for {
		select {
		case <-closed:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(base, wait)
		conn, err := w.dial(ctx, "tcp", failoverAddr)
		cancel()
		if err == nil {
			addr := conn.RemoteAddr().String()
			_ = conn.Close()
			w.reached(addr)
		}
	}
}

// watchedConn is a connection the watch tracks until it is closed.
type watchedConn struct {
	net.Conn
	w    *masterWatch
	addr string
}

func (c *watchedConn) Close() error {
	c.w.mu.Lock()
	delete(c.w.open, c)
	c.w.mu.Unlock()
	return c.Conn.Close()
}
