package redisstore

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/redis/internal/netns"
)

// testTimeout is the store deadline of tests that are not about deadlines:
// one no stall of a busy CI machine reaches, so that those tests see only
// decisions. A healthy call takes a millisecond whatever the deadline.
const testTimeout = 30 * time.Second

// quiet drops go-redis's log lines: the outage tests make it log every
// failed dial.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	goredis.SetLogger(quiet{})
	goleak.VerifyTestMain(m,
		// go-redis probes a server it could not dial once a second until it
		// answers or the client is closed; the probe notices the close only
		// after its sleep.
		goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
	)
}

// redisAddr is the shared Redis the tests use: REDIS_ADDR or the default.
func redisAddr() string {
	if a := os.Getenv("REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// unavailable skips the test, or fails it in CI, where Redis must be there.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set: Redis tests fail rather than skip)", msg)
	}
	t.Skipf("%s; skipping (set REDIS_ADDR to a reachable Redis; in CI this fails)", msg)
}

// clientOptions are the recommended options for limiter traffic.
func clientOptions(addr string) *goredis.Options {
	return &goredis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		PoolSize:              64,
	}
}

// sharedClient connects to the shared Redis, or skips (fails in CI).
func sharedClient(t testing.TB) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(clientOptions(redisAddr()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		unavailable(t, "Redis at %s is unreachable: %v", redisAddr(), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// testPrefix returns a key prefix private to one test, and deletes its
// keys when the test ends.
func testPrefix(t testing.TB, c goredis.UniversalClient) string {
	prefix := "sluicetest:" + randomHex(6) + ":"
	t.Cleanup(func() { deletePrefix(c, prefix) })
	return prefix
}

// deletePrefix deletes every key starting with prefix (on every master of a
// Cluster).
func deletePrefix(c goredis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	del := func(ctx context.Context, c goredis.UniversalClient) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		return iter.Err()
	}
	switch cc := c.(type) {
	case *goredis.ClusterClient:
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, m *goredis.Client) error { return del(ctx, m) })
	case *goredis.Ring:
		_ = cc.ForEachShard(ctx, func(ctx context.Context, m *goredis.Client) error { return del(ctx, m) })
	default:
		_ = del(ctx, c)
	}
}

// newTestStore returns a store with a private prefix.
func newTestStore(t testing.TB, c goredis.UniversalClient, opts ...Option) *Store {
	t.Helper()
	s, err := New(c, append([]Option{WithPrefix(testPrefix(t, c)), WithTimeout(testTimeout)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	if s.started != nil {
		<-s.started // the start check's PING is no test's round trip
	}
	return s
}

// redisFactory makes stores on c deciding on the suite's clock.
func redisFactory(c goredis.UniversalClient, opts ...Option) func(t testing.TB, clock core.Clock) core.Store {
	return func(t testing.TB, clock core.Clock) core.Store {
		return newTestStore(t, c, append([]Option{WithClock(clock)}, opts...)...)
	}
}

func memoryFactory(t testing.TB, clock core.Clock) core.Store {
	s, err := memory.New(memory.WithClock(clock))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// testSeed is SLUICE_SEED if set, else a fresh one; either way it is logged
// so that a failure can be replayed.
func testSeed(t testing.TB) uint64 {
	if s := os.Getenv("SLUICE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		return n
	}
	n := uint64(time.Now().UnixNano())
	t.Logf("seed %d (replay with SLUICE_SEED=%d)", n, n)
	return n
}

// counter is a go-redis hook that counts the script calls a client sends:
// commands one by one, and pipelines holding script calls (one round trip
// each, whatever their length). The connection handshake is not counted.
type counter struct {
	commands, pipelines, pipelined atomic.Int64
}

// hook counts the script calls of s.
func hook(s *Store) *counter {
	n := new(counter)
	s.conns.client.AddHook(n)
	return n
}

func isScript(cmd goredis.Cmder) bool { return cmd.Name() == "evalsha" || cmd.Name() == "eval" }

func (c *counter) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (c *counter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if isScript(cmd) {
			c.commands.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		n := 0
		for _, cmd := range cmds {
			if isScript(cmd) {
				n++
			}
		}
		if n > 0 {
			c.pipelines.Add(1)
			c.pipelined.Add(int64(n))
		}
		return next(ctx, cmds)
	}
}

// roundTrips is the number of round trips counted so far.
func (c *counter) roundTrips() int64 { return c.commands.Load() + c.pipelines.Load() }

// stallMeter measures how late this machine runs goroutines: one of its own
// sleeps a millisecond at a time and records its worst oversleep. Tests
// compare a latency with what it was bound to plus this (see within),
// never with a fixed margin: on a busy machine every goroutine is late
// alike, and only lateness beyond the machine's own is the code's.
type stallMeter struct {
	worst atomic.Int64
	stop  chan struct{}
	done  chan struct{}
}

// newStallMeter starts a meter, stopped when the test ends.
func newStallMeter(t testing.TB) *stallMeter {
	m := &stallMeter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			start := time.Now()
			select {
			case <-m.stop:
				return
			case <-time.After(time.Millisecond):
			}
			if late := int64(time.Since(start) - time.Millisecond); late > m.worst.Load() {
				m.worst.Store(late)
			}
		}
	}()
	t.Cleanup(func() { close(m.stop); <-m.done })
	return m
}

// max is the worst lateness seen so far.
func (m *stallMeter) max() time.Duration { return time.Duration(m.worst.Load()) }

// within checks that got is at most bound, give or take the machine's
// lateness: twice the worst the meter saw (a call waits on a timer and is
// then woken, and both may run late) and a millisecond.
func within(t testing.TB, m *stallMeter, got, bound time.Duration, what string) {
	t.Helper()
	slack := 2*m.max() + time.Millisecond
	if got > bound+slack {
		t.Errorf("%s took %v, more than %v and the machine's own lateness (%v)", what, got, bound, slack)
	}
}

// server is a private redis-server on a free loopback port, for tests that
// kill, stop, restart or cluster it; or, for the fault suite, on a port of
// a network namespace of its own (see faultNet).
type server struct {
	t    testing.TB
	port int
	dir  string
	args []string
	conf string // a config file to start from, for a sentinel
	cmd  *exec.Cmd
	ns   *netns.NS // nil: loopback
	// dial reaches the server from where the test's clients run: nil on
	// loopback, else the fault net's client namespace.
	dial dialFunc
}

func requireBinaries(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			unavailable(t, "%s is not installed", n)
		}
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer starts a redis-server with extra arguments, and stops it when
// the test ends.
func startServer(t testing.TB, extra ...string) *server {
	t.Helper()
	requireBinaries(t, "redis-server")
	s := &server{t: t, port: freePort(t), dir: t.TempDir(), args: extra}
	s.start()
	t.Cleanup(s.kill)
	return s
}

func (s *server) addr() string { return net.JoinHostPort(s.host(), strconv.Itoa(s.port)) }

// host is the address the server listens on.
func (s *server) host() string {
	if s.ns != nil {
		return s.ns.IP
	}
	return "127.0.0.1"
}

// ping pings the server from where the test's clients run.
func (s *server) ping() error { return pingVia(s.dial, s.addr()) }

// start (re)starts the server on its port and waits until it answers.
func (s *server) start() {
	s.t.Helper()
	args := append([]string{
		"--port", strconv.Itoa(s.port), "--bind", s.host(),
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--protected-mode", "no", "--daemonize", "no",
	}, s.args...)
	if s.conf != "" {
		args = append([]string{s.conf, "--sentinel", "--port", strconv.Itoa(s.port), "--bind", s.host(),
			"--protected-mode", "no", "--daemonize", "no", "--dir", s.dir}, s.args...)
	}
	cmd := exec.Command("redis-server", args...)
	if s.ns != nil {
		cmd = s.ns.Command("redis-server", args...) // ip execs it: the pid is the server's
	}
	// No Pdeathsig: it fires when the thread that started the process
	// ends, and the fault suite ends threads (see netns.NS.Dial). What a
	// test killed before its cleanup leaves in namespaces, netns.Sweep
	// kills.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(s.t, cmd.Start())
	s.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s.ping() == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not come up: %v", s.addr(), s.ping())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ping sends a PING over a fresh loopback connection.
func ping(addr string) error { return pingVia(nil, addr) }

// pingVia sends a PING over a fresh connection made by dial (nil: on
// loopback).
func pingVia(dial dialFunc, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// kill ends the server with SIGKILL (it may be stopped) and reaps it.
func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// signal sends sig to the server's process group.
func (s *server) signal(sig syscall.Signal) {
	require.NotNil(s.t, s.cmd)
	require.NoError(s.t, syscall.Kill(-s.cmd.Process.Pid, sig))
}
