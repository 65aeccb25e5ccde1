package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/storekit"
	"github.com/sluice-go/sluice/store/storetest"
)

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// startCluster starts a Redis Cluster of n masters on loopback ports, waits
// until every node reports cluster_state:ok, and stops it when the test ends.
func startCluster(t *testing.T, n int) []string {
	t.Helper()
	srvs := startClusterNodes(t, n, 0, 5000)
	addrs := make([]string, len(srvs))
	for i, srv := range srvs {
		addrs[i] = srv.addr()
	}
	return addrs
}

// startClusterNodes starts a Redis Cluster of masters masters with
// replicas replicas each (cluster-node-timeout nodeTimeout ms) on loopback
// ports, waits until every node reports cluster_state:ok and every replica
// is in sync, and stops it by pid when the test ends.
func startClusterNodes(t *testing.T, masters, replicas, nodeTimeout int) []*server {
	t.Helper()
	return startClusterOn(t, nil, masters, replicas, nodeTimeout)
}

// startClusterOn is startClusterNodes on loopback (fn nil), or with each
// node in a namespace of its own on fn.
func startClusterOn(t *testing.T, fn *faultNet, masters, replicas, nodeTimeout int) []*server {
	t.Helper()
	requireBinaries(t, "redis-server", "redis-cli")
	n := masters * (1 + replicas)
	ports := freePorts(t, 2*n)
	srvs := make([]*server, n)
	addrs := make([]string, n)
	for i := range n {
		srv := &server{t: t, port: ports[i], dir: t.TempDir(), args: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(ports[n+i]), "--cluster-node-timeout", strconv.Itoa(nodeTimeout),
			"--repl-diskless-sync-delay", "0", // a replica syncs at once, not 5s later
		}}
		fn.place(srv, fmt.Sprint("node", i))
		srv.start()
		t.Cleanup(srv.kill)
		srvs[i], addrs[i] = srv, srv.addr()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	out, err := fn.command(ctx, "redis-cli", args...).CombinedOutput()
	require.NoError(t, err, "redis-cli --cluster create: %s", out)

	for _, a := range addrs {
		c := goredis.NewClient(&goredis.Options{Addr: a, Dialer: fn.dialer()})
		for {
			info, err := c.ClusterInfo(ctx).Result()
			repl, rerr := c.Info(ctx, "replication").Result()
			synced := rerr == nil && (strings.Contains(repl, "role:master") || strings.Contains(repl, "master_link_status:up"))
			//lint:ignore SA1019 CLUSTER SLOTS lists each range with its replicas, as the test needs; Redis 7.0 still serves it
			slots, serr := c.ClusterSlots(ctx).Result()
			for _, r := range slots {
				synced = synced && len(r.Nodes) == 1+replicas
			}
			if err == nil && serr == nil && strings.Contains(info, "cluster_state:ok") && synced {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("node %s: cluster not ok: %v %s %s", a, err, info, repl)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.Close()
	}
	return srvs
}

// TestCluster runs the conformance suite, the differential test and
// layered limits across slots on a three-master Redis Cluster.
func TestCluster(t *testing.T) {
	start := time.Now()
	addrs := startCluster(t, 3)
	t.Logf("cluster up in %v", time.Since(start))
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{
		Addrs:                 addrs,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
	})
	t.Cleanup(func() { _ = cc.Close() })
	ctx := context.Background()
	require.NoError(t, cc.ForEachShard(ctx, func(ctx context.Context, c *goredis.Client) error { return c.Ping(ctx).Err() }))

	t.Run("Conformance", func(t *testing.T) {
		storetest.Run(t, redisFactory(cc))
	})

	t.Run("Differential", func(t *testing.T) {
		storetest.Differential(t, memoryFactory, redisFactory(cc), 2000, testSeed(t))
	})

	t.Run("BatchedDifferential", func(t *testing.T) {
		batchedDifferential(t, cc, 500, testSeed(t), true)
	})

	t.Run("ReservationDifferential", func(t *testing.T) {
		storetest.ReservationDifferential(t, sweeplessMemory, redisFactory(cc), 1000, testSeed(t))
	})

	t.Run("KeySlots", func(t *testing.T) {
		s := newTestStore(t, cc)
		p := tenPer10s(core.GCRA, "slots")
		for i := range 200 {
			k := s.Key(randomHex(1+i%9)+[]string{"", "}", "{", "%", "{a}"}[i%5], p)
			want, err := cc.ClusterKeySlot(ctx, k).Result()
			require.NoError(t, err)
			require.Equal(t, int(want), slot(k), k)
		}
	})

	// The per-IP and login limits of one client share the client's slot:
	// one script call decides both, and a denial costs no second round
	// trip to give anything back.
	t.Run("LayeredPairOneSlot", func(t *testing.T) {
		clock := sluicetest.NewManualClock(storetest.Epoch)
		s := newTestStore(t, cc, WithClock(clock))
		n := hook(s)
		perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
		login := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.TokenBucket, Quota: 3, Period: time.Minute, Burst: 3})
		rs := []core.Request{{Key: "198.51.100.7", Policy: perIP, Cost: 1}, {Key: "198.51.100.7", Policy: login, Cost: 1}}
		require.Equal(t, slot(s.Key(rs[0].Key, perIP)), slot(s.Key(rs[1].Key, login)))
		ds := make([]core.Decision, 2)
		require.NoError(t, s.TakeAll(ctx, rs, ds)) // may load the script
		for i := range 4 {
			before, scripts := n.roundTrips(), n.pipelined.Load()+n.commands.Load()
			require.NoError(t, s.TakeAll(ctx, rs, ds))
			assert.Equal(t, int64(1), n.roundTrips()-before, "login %d: one round trip", i)
			assert.Equal(t, int64(1), n.pipelined.Load()+n.commands.Load()-scripts, "login %d: one script call", i)
			assert.Equal(t, i < 2, ds[1].Allowed, "login %d", i)
		}
		assert.Equal(t, int64(7), ds[0].Remaining, "the denied logins took nothing from the per-IP limit")
	})

	t.Run("LayeredAcrossSlots", func(t *testing.T) {
		clock := sluicetest.NewManualClock(storetest.Epoch)
		s := newTestStore(t, cc, WithClock(clock))
		n := hook(s)

		// Three layers on three masters.
		ip := tenPer10s(core.TokenBucket, "ip")
		user := core.MustPolicy(core.PolicyConfig{Name: "user", Algorithm: core.SlidingLog, Quota: 3, Period: 10 * time.Second})
		route := core.MustPolicy(core.PolicyConfig{Name: "route", Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 5})
		nodeOf := masters(t, cc)
		rs := make([]core.Request, 3)
		used := map[string]bool{}
		for i, p := range []*core.Policy{ip, user, route} {
			for j := 0; ; j++ {
				k := fmt.Sprintf("%s-%d", p.Name(), j)
				if node := nodeOf(slot(s.Key(k, p))); !used[node] {
					used[node] = true
					rs[i] = core.Request{Key: k, Policy: p, Cost: 1}
					break
				}
			}
		}
		require.Len(t, used, 3, "three masters")
		ds := make([]core.Decision, 3)
		trips := func() int64 { return n.pipelines.Load() + n.commands.Load() }
		_, err := s.Take(ctx, core.Request{Key: "warm", Policy: ip, Cost: 1})
		require.NoError(t, err)
		require.NoError(t, s.TakeAll(ctx, rs, ds)) // may load the script on every node

		for i := range 2 {
			before := trips()
			require.NoError(t, s.TakeAll(ctx, rs, ds))
			assert.Equal(t, int64(1), trips()-before, "one pipelined round trip when allowed")
			require.True(t, ds[0].Allowed && ds[1].Allowed && ds[2].Allowed, "request %d", i)
			assert.Equal(t, int64(8-i), ds[0].Remaining)
			assert.Equal(t, int64(1-i), ds[1].Remaining)
			assert.Equal(t, int64(3-i), ds[2].Remaining)
		}
		for range 3 {
			before := trips()
			require.NoError(t, s.TakeAll(ctx, rs, ds))
			assert.Equal(t, int64(2), trips()-before, "a denial costs a second round trip to give back")
			assert.True(t, ds[0].Allowed, "the IP layer alone would pass")
			assert.Equal(t, int64(7), ds[0].Remaining, "and reports its standing without the request")
			assert.False(t, ds[1].Allowed)
			assert.Equal(t, 10*time.Second, ds[1].RetryAfter)
			assert.True(t, ds[2].Allowed)
			assert.Equal(t, int64(2), ds[2].Remaining)
			assert.Same(t, user, storekit.MostRestrictive(ds).Policy)
		}
		for i, want := range []int64{6, 0, 1} {
			d, err := s.Take(ctx, rs[i])
			require.NoError(t, err)
			assert.Equal(t, want, d.Remaining, "layer %d: the denials took nothing", i)
		}
	})
}

// masters returns a function mapping a slot to the address of its master.
func masters(t *testing.T, cc *goredis.ClusterClient) func(int) string {
	shards, err := cc.ClusterShards(context.Background()).Result()
	require.NoError(t, err)
	return func(s int) string {
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if int64(s) < r.Start || int64(s) > r.End {
					continue
				}
				for _, n := range sh.Nodes {
					if n.Role == "master" {
						return net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
					}
				}
			}
		}
		t.Fatalf("slot %d has no master", s)
		return ""
	}
}

// TestRing runs the conformance and differential tests on a go-redis Ring of
// two servers, which shards by hash tag: layered requests are grouped by tag.
func TestRing(t *testing.T) {
	a, b := startServer(t), startServer(t)
	ring := goredis.NewRing(&goredis.RingOptions{
		Addrs:                 map[string]string{"a": a.addr(), "b": b.addr()},
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
	})
	t.Cleanup(func() { _ = ring.Close() })
	require.Eventually(t, func() bool { return ring.Ping(context.Background()).Err() == nil }, 5*time.Second, 10*time.Millisecond)
	t.Run("Conformance", func(t *testing.T) {
		storetest.Run(t, redisFactory(ring))
	})
	t.Run("Differential", func(t *testing.T) {
		storetest.Differential(t, memoryFactory, redisFactory(ring), 1000, testSeed(t))
	})
	t.Run("BatchedDifferential", func(t *testing.T) {
		batchedDifferential(t, ring, 300, testSeed(t), true)
	})
	t.Run("BothShardsUsed", func(t *testing.T) {
		s := newTestStore(t, ring)
		p := tenPer10s(core.GCRA, "spread")
		for i := range 50 {
			_, err := s.Take(context.Background(), core.Request{Key: strconv.Itoa(i), Policy: p, Cost: 1})
			require.NoError(t, err)
		}
		for _, srv := range []*server{a, b} {
			c := goredis.NewClient(&goredis.Options{Addr: srv.addr()})
			n, err := c.DBSize(context.Background()).Result()
			_ = c.Close()
			require.NoError(t, err)
			assert.Positive(t, n, srv.addr())
		}
	})
}

// lossyPipelines is a client whose second and later pipelines are lost:
// nothing is sent, and every command fails.
type lossyPipelines struct {
	*goredis.Ring
	calls atomic.Int32
}

var errLost = errors.New("connection lost")

func (l *lossyPipelines) Pipelined(ctx context.Context, fn func(goredis.Pipeliner) error) ([]goredis.Cmder, error) {
	if l.calls.Add(1) == 1 {
		return l.Ring.Pipelined(ctx, fn)
	}
	return nil, fn(lostPipeline{l.Ring.Pipeline()})
}

type lostPipeline struct{ goredis.Pipeliner }

func (lostPipeline) Process(_ context.Context, cmd goredis.Cmder) error {
	cmd.SetErr(errLost)
	return nil
}

// TestFailedRefundIsReported: a layered request across shards that one
// layer denies is denied, and if giving back what the other layer took
// fails, the store says so in its log rather than dropping the error.
func TestFailedRefundIsReported(t *testing.T) {
	ring := goredis.NewRing(&goredis.RingOptions{Addrs: map[string]string{"a": redisAddr()}, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = ring.Close() })
	if err := ring.Ping(context.Background()).Err(); err != nil {
		unavailable(t, "Redis at %s is unreachable: %v", redisAddr(), err)
	}
	lossy := &lossyPipelines{Ring: ring}
	var logged bytes.Buffer
	s := newTestStore(t, lossy, WithLogger(slog.New(slog.NewTextHandler(&logged, nil))), WithClock(sluicetest.NewManualClock(storetest.Epoch)))
	require.Equal(t, byTag, s.layout, "a client of a kind the store does not know is grouped by hash tag")
	require.NoError(t, s.Preload(context.Background()), "no NOSCRIPT round trip")
	p := core.MustPolicy(core.PolicyConfig{Name: "refund", Algorithm: core.GCRA, Quota: 1, Period: time.Hour, Burst: 5})
	ds := make([]core.Decision, 2)
	err := s.TakeAll(context.Background(), []core.Request{{Key: "ok", Policy: p, Cost: 1}, {Key: "too-much", Policy: p, Cost: 6}}, ds)
	require.NoError(t, err, "the request was decided")
	assert.False(t, ds[1].Allowed)
	assert.True(t, ds[1].Impossible)
	assert.Equal(t, int32(2), lossy.calls.Load(), "the refund was tried")
	assert.Contains(t, logged.String(), "giving back what its other layers took failed")
	assert.Contains(t, logged.String(), s.Key("ok", p))
	assert.Contains(t, logged.String(), errLost.Error())
}
