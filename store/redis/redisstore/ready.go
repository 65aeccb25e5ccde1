package redisstore

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

var _ core.SharedStore = (*Store)(nil)

// Local returns the in-process store a core.Limiter given no failure mode
// decides on while Redis cannot (core.SharedStore): each instance then
// enforces every whole limit itself. It runs on the store's clock and
// closes with the store.
func (s *Store) Local() core.Store { return s.local }

// newLocal makes the store's Local store.
func (s *Store) newLocal() error {
	var opts []memory.Option
	if s.clock != nil {
		opts = append(opts, memory.WithClock(s.clock))
	}
	m, err := memory.New(opts...)
	if err != nil {
		return fmt.Errorf("redisstore: local store: %w", err)
	}
	s.local = m
	return nil
}

// Ready reports whether decisions come from Redis, for a health endpoint's
// readiness check: nil if Redis answers a PING now (within ctx and the
// connection timeout) and the store is not waiting for it to come back, an
// error saying why not otherwise.
func (s *Store) Ready(ctx context.Context) error {
	if s.started != nil {
		select { // the start check first: its WARN, if any, comes before
		case <-s.started:
		case <-ctx.Done():
		}
	}
	if s.pipe.down.Load() {
		return fmt.Errorf("redisstore: not ready: %w; decisions come from the limiter's fallback or failure mode", errDown)
	}
	ctx, cancel := context.WithTimeout(ctx, s.connWait)
	defer cancel()
	if err := s.conns.client.Ping(ctx).Err(); !answered(err) {
		return fmt.Errorf("redisstore: not ready: Redis at %s does not answer: %w; decisions come from the limiter's fallback or failure mode", s.addrs, err)
	}
	return nil
}

// WithRequireReachable makes New wait up to wait for Redis to answer a
// PING, and fail if it does not: for deployments that would rather not
// start than start degraded. Without it New does not wait, and a Redis it
// cannot reach is logged once at WARN (see WithLogger).
func WithRequireReachable(wait time.Duration) Option {
	return func(s *Store) error {
		if wait <= 0 {
			return fmt.Errorf("redisstore: WithRequireReachable's wait must be positive, got %v", wait)
		}
		s.startWait = wait
		return nil
	}
}

// checkReachable pings Redis until it answers or wait has passed.
func (s *Store) checkReachable(wait time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for {
		err := s.conns.client.Ping(ctx).Err()
		if answered(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisstore: Redis at %s did not answer within %v (WithRequireReachable): %w", s.addrs, wait, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// probeStart pings Redis once, in the background, and logs at WARN if it
// does not answer: a wrong address or a Redis down at start is said once,
// through the store's logger, even with no observer wired.
func (s *Store) probeStart() {
	s.started = make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), s.connWait)
	s.stopProbe = cancel
	go func() {
		defer close(s.started)
		defer cancel()
		err := s.conns.client.Ping(ctx).Err()
		if answered(err) || s.log == nil || s.closing.Load() {
			return // Redis answers, or the store is closing
		}
		s.log.WarnContext(ctx, "sluice: redisstore cannot reach Redis at start; until it answers, decisions come from the limiter's fallback "+
			"(by default each instance enforces every limit in process) or its failure mode; Store.Ready reports when Redis answers",
			"addr", s.addrs, "error", err.Error())
	}()
}

// stopStart ends the start probe, for Close, once the store's connections
// are closed.
func (s *Store) stopStart() {
	if s.started == nil {
		return
	}
	s.stopProbe()
	<-s.started
}

// clientAddrs returns the addresses client dials, refusing one that cannot
// be parsed: a host and a port of 0 to 65535 (a Unix socket's path, or a
// failover client, whose sentinels the client finds, go unchecked).
func clientAddrs(client goredis.UniversalClient) (string, error) {
	var addrs []string
	switch c := client.(type) {
	case *goredis.Client:
		o := c.Options()
		if o.Network == "unix" || o.Addr == failoverAddr {
			return o.Addr, nil
		}
		addrs = []string{o.Addr}
	case *goredis.ClusterClient:
		addrs = c.Options().Addrs
	case *goredis.Ring:
		for _, a := range c.Options().Addrs {
			addrs = append(addrs, a)
		}
	default:
		return fmt.Sprintf("(a %T)", client), nil
	}
	for _, a := range addrs {
		if err := checkAddr(a); err != nil {
			return "", fmt.Errorf("redisstore: the client's address %q: %w", a, err)
		}
	}
	return strings.Join(addrs, ","), nil
}

// checkAddr checks that addr is host:port with a port of 0 to 65535.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}
