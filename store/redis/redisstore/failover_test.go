package redisstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// failoverGoal is how soon after the failover is complete (the cluster
// reports ok, the sentinels name the new master) decisions must come from
// Redis again on every key.
const failoverGoal = 2 * time.Second

// failoverTimeout is the failover tests' store deadline: long enough that a
// loaded machine's stalls make no call on a healthy server miss it, short
// beside the goal. The failures a failover causes are fast ones (refused
// dials, CLUSTERDOWN, the store down), or calls on their way when the
// master died.
const failoverTimeout = 500 * time.Millisecond

// TestClusterFailover kills a master of a three-master Cluster with a
// replica each (cluster-node-timeout 1000) under load, through a
// ClusterClient with go-redis's defaults (a slot map reloaded every 60s):
// once the replica is promoted and the cluster reports ok, decisions must
// come from Redis again on every slot within failoverGoal, and be exact
// after (a fresh key of burst 50 allows exactly 50).
func TestClusterFailover(t *testing.T) {
	began := time.Now()
	srvs := startClusterNodes(t, 3, 1, 1000)
	t.Logf("3 masters and 3 replicas up in %v", time.Since(began))
	addrs := make([]string, len(srvs))
	byAddr := map[string]*server{}
	for i, srv := range srvs {
		addrs[i] = srv.addr()
		byAddr[srv.addr()] = srv
	}
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs}) // the user's: go-redis's defaults
	t.Cleanup(func() { _ = cc.Close() })
	s := newTestStore(t, cc, WithTimeout(failoverTimeout))
	p := core.MustPolicy(core.PolicyConfig{Name: "failover", Algorithm: core.GCRA, Quota: 1_000_000, Period: time.Second, Burst: 1_000_000})

	//lint:ignore SA1019 CLUSTER SLOTS lists each range with its replicas, as the test needs; Redis 7.0 still serves it
	slots, err := cc.ClusterSlots(context.Background()).Result()
	require.NoError(t, err)
	masterOf := func(slot int) goredis.ClusterSlot {
		for _, r := range slots {
			if slot >= r.Start && slot <= r.End {
				return r
			}
		}
		t.Fatalf("slot %d has no master", slot)
		return goredis.ClusterSlot{}
	}
	// Three keys on each master; the victim is the first key's master.
	victim := masterOf(slot(s.Key("k0", p)))
	require.Len(t, victim.Nodes, 2, "the victim has a replica")
	keys := map[string][]string{}
	for i := 0; len(keys) < 3 || anyShort(keys, 3); i++ {
		k := fmt.Sprint("k", i)
		m := masterOf(slot(s.Key(k, p))).Nodes[0].Addr
		if len(keys[m]) < 3 {
			keys[m] = append(keys[m], k)
		}
	}
	survivors := []string{}
	for _, a := range addrs {
		if a != victim.Nodes[0].Addr {
			survivors = append(survivors, a)
		}
	}
	promoted := victim.Nodes[1].Addr

	adm := newAdmins(t)
	adm.allClusterOK(context.Background(), survivors) // the connections open
	load := startFailoverLoad(t, s, p, keys)
	load.waitAll(t, "before the kill")
	killed := load.mark()
	byAddr[victim.Nodes[0].Addr].kill()
	ok := waitForServers(t, load, 20*time.Second, "the replica promoted and the cluster ok", func(ctx context.Context) bool {
		return adm.isMaster(ctx, promoted) && adm.allClusterOK(ctx, survivors)
	})
	load.hold(t, ok)
	t.Logf("killed master %s; replica %s promoted and cluster ok %v after the kill; %d slot-map reloads asked for",
		victim.Nodes[0].Addr, promoted, ok.Sub(killed), s.topo.asked.Load())
	load.check(t, victim.Nodes[0].Addr, killed, ok)

	exact(t, s, "fresh", masterOf, victim.Nodes[0].Addr)
}

// anyShort reports whether any master has fewer than n keys.
func anyShort(keys map[string][]string, n int) bool {
	for _, ks := range keys {
		if len(ks) < n {
			return true
		}
	}
	return false
}

// exact checks a fresh key on the failed master's slots (now its replica's)
// allows exactly its burst.
func exact(t *testing.T, s *Store, name string, masterOf func(int) goredis.ClusterSlot, failed string) {
	t.Helper()
	burst := core.MustPolicy(core.PolicyConfig{Name: "burst", Algorithm: core.GCRA, Quota: 50, Period: time.Hour, Burst: 50})
	key := ""
	for i := 0; key == ""; i++ {
		if k := fmt.Sprint(name, i); masterOf == nil || masterOf(slot(s.Key(k, burst))).Nodes[0].Addr == failed {
			key = k
		}
	}
	allowed := 0
	for range 80 {
		d, err := s.Take(context.Background(), core.Request{Key: key, Policy: burst, Cost: 1})
		require.NoError(t, err)
		if d.Allowed {
			allowed++
		}
	}
	assert.Equal(t, 50, allowed, "burst 50 on a fresh key after the failover: exactly 50 of 80")
}

// failoverLoad takes on keys grouped by the server holding them, from a
// goroutine per key, and records per group when calls failed and when the
// first decision from Redis came after a mark.
type failoverLoad struct {
	s      *Store
	p      *core.Policy
	base   time.Time
	stalls *stallMeter
	marked atomic.Int64 // ns since base; 0: not yet
	groups map[string]*loadGroup
	stop   chan struct{}
	wg     sync.WaitGroup
	errs   chan string
}

type loadGroup struct {
	ok, failed atomic.Int64
	lat        latencies    // of the decisions from Redis
	lastFail   atomic.Int64 // ns since base, of the latest failed call's start
	firstOK    atomic.Int64 // ns since base, of the first decision after the mark
	lastErr    atomic.Pointer[string]
}

func startFailoverLoad(t *testing.T, s *Store, p *core.Policy, keys map[string][]string) *failoverLoad {
	l := &failoverLoad{s: s, p: p, base: time.Now(), stalls: newStallMeter(t), groups: map[string]*loadGroup{}, stop: make(chan struct{}), errs: make(chan string, 16)}
	for g, ks := range keys {
		lg := &loadGroup{}
		l.groups[g] = lg
		for _, k := range ks {
			l.wg.Go(func() { l.run(lg, k) })
		}
	}
	t.Cleanup(l.close)
	return l
}

func (l *failoverLoad) run(g *loadGroup, key string) {
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		start := int64(time.Since(l.base))
		_, err := l.s.Take(context.Background(), core.Request{Key: key, Policy: l.p, Cost: 1})
		took := time.Duration(int64(time.Since(l.base)) - start)
		if err != nil {
			if n := g.failed.Add(1); n%200 == 1 {
				select { // a sample, for the log
				case l.errs <- fmt.Sprintf("%s at %v after the mark: %v", key, time.Duration(start-l.marked.Load()), err):
				default:
				}
			}
			for last := g.lastFail.Load(); start > last; last = g.lastFail.Load() {
				if g.lastFail.CompareAndSwap(last, start) {
					msg := err.Error()
					g.lastErr.Store(&msg)
					break
				}
			}
		} else {
			g.ok.Add(1)
			g.lat.add(took)
			if m := l.marked.Load(); m != 0 && start > m {
				g.firstOK.CompareAndSwap(0, start)
			}
		}
		time.Sleep(time.Millisecond)
	}
}

func (l *failoverLoad) close() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// mark records now as the kill, and returns it.
func (l *failoverLoad) mark() time.Time {
	now := time.Now()
	l.marked.Store(max(int64(now.Sub(l.base)), 1))
	return now
}

func (l *failoverLoad) at(ns int64) time.Time { return l.base.Add(time.Duration(ns)) }

// waitAll waits until every group has had a decision from Redis since now.
func (l *failoverLoad) waitAll(t *testing.T, what string) {
	t.Helper()
	base := map[*loadGroup]int64{}
	for _, g := range l.groups {
		base[g] = g.ok.Load()
	}
	require.Eventually(t, func() bool {
		for _, g := range l.groups {
			if g.ok.Load() <= base[g] {
				return false
			}
		}
		return true
	}, 30*time.Second, time.Millisecond, "decisions from Redis on every key %s", what)
}

// hold keeps the load running until every group has had a decision from
// Redis after the mark, and failoverGoal and a margin have passed since ok
// (but no longer than 10s past it): a call failing by then shows.
func (l *failoverLoad) hold(t *testing.T, ok time.Time) {
	t.Helper()
	limit := ok.Add(10 * time.Second)
	for time.Now().Before(limit) {
		done := time.Now().After(ok.Add(failoverGoal + 500*time.Millisecond))
		for _, g := range l.groups {
			done = done && g.firstOK.Load() != 0
		}
		if done {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	l.close()
}

// logErrors logs the sample of failed calls' errors.
func (l *failoverLoad) logErrors(t *testing.T) {
	t.Helper()
	for {
		select {
		case e := <-l.errs:
			t.Log(e)
		default:
			return
		}
	}
}

// check reports the gaps from the kill and from ok (the failover complete)
// to the first decision from Redis on the failed server's keys, and holds
// every group to the goal: no call started later than failoverGoal after ok
// failed, and decisions came back by then.
func (l *failoverLoad) check(t *testing.T, failed string, killed, ok time.Time) {
	t.Helper()
	defer l.logErrors(t)
	for name, g := range l.groups {
		first := g.firstOK.Load()
		if !assert.NotZero(t, first, "%s: no decision from Redis after the failover", name) {
			continue
		}
		firstAt := l.at(first)
		if name == failed {
			t.Logf("failed master %s: first decision from Redis %v after the kill, %v after ok; %d calls failed, %d decided; worst scheduling delay %v",
				name, firstAt.Sub(killed), firstAt.Sub(ok), g.failed.Load(), g.ok.Load(), l.stalls.max())
		} else {
			t.Logf("healthy %s: %d calls failed, %d decided", name, g.failed.Load(), g.ok.Load())
		}
		within(t, l.stalls, firstAt.Sub(ok), failoverGoal, name+": first decision from Redis after ok")
		if last := g.lastFail.Load(); last > first {
			within(t, l.stalls, l.at(last).Sub(ok), failoverGoal, name+": a call failing after ok ("+*g.lastErr.Load()+")")
		}
	}
}

// waitFor polls cond every 10ms until it holds, and returns when it first
// did; after limit it skips the test if the machine stalled meanwhile
// (the servers are as late as the test), else fails it.
func waitFor(t *testing.T, l *failoverLoad, limit time.Duration, what string, cond func(ctx context.Context) bool) time.Time {
	t.Helper()
	return poll(t, l, limit, what, cond, false)
}

// waitForServers is waitFor for a step the servers take on their own (a
// replica promoted, the sentinels agreeing on a master): past limit it
// skips the test, since nothing of the store's is judged yet and a loaded
// machine can hold Redis's own failover back.
func waitForServers(t *testing.T, l *failoverLoad, limit time.Duration, what string, cond func(ctx context.Context) bool) time.Time {
	t.Helper()
	return poll(t, l, limit, what, cond, true)
}

func poll(t *testing.T, l *failoverLoad, limit time.Duration, what string, cond func(ctx context.Context) bool, servers bool) time.Time {
	t.Helper()
	end := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		held := cond(ctx)
		cancel()
		if held {
			return time.Now()
		}
		if time.Now().After(end) {
			if servers {
				t.Skipf("waiting for %s: the servers did not within %v (the machine stalled %v at most), skipping", what, limit, l.stalls.max())
			}
			if l.stalls.max() > 500*time.Millisecond {
				t.Skipf("waiting for %s: not within %v; the machine stalled %v, skipping", what, limit, l.stalls.max())
			}
			t.Fatalf("waiting for %s: not within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// admins are plain clients to the test's servers, one each, made on first
// use and closed when the test ends: polling a server costs no dial.
type admins struct {
	t         *testing.T
	dial      dialFunc // nil: loopback
	nodes     map[string]*goredis.Client
	sentinels map[string]*goredis.SentinelClient
}

func newAdmins(t *testing.T) *admins { return newAdminsVia(t, nil) }

// newAdminsVia returns admins whose clients dial with dial (nil: on
// loopback).
func newAdminsVia(t *testing.T, dial dialFunc) *admins {
	a := &admins{t: t, dial: dial, nodes: map[string]*goredis.Client{}, sentinels: map[string]*goredis.SentinelClient{}}
	t.Cleanup(func() {
		for _, c := range a.nodes {
			_ = c.Close()
		}
		for _, c := range a.sentinels {
			_ = c.Close()
		}
	})
	return a
}

func (a *admins) node(addr string) *goredis.Client {
	if a.nodes[addr] == nil {
		a.nodes[addr] = goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1, Dialer: a.dial})
	}
	return a.nodes[addr]
}

func (a *admins) sentinel(addr string) *goredis.SentinelClient {
	if a.sentinels[addr] == nil {
		a.sentinels[addr] = goredis.NewSentinelClient(&goredis.Options{Addr: addr, MaxRetries: -1, Dialer: a.dial})
	}
	return a.sentinels[addr]
}

// isMaster reports whether the server at addr says it is a master.
func (a *admins) isMaster(ctx context.Context, addr string) bool {
	info, err := a.node(addr).Info(ctx, "replication").Result()
	return err == nil && strings.Contains(info, "role:master")
}

// allClusterOK reports whether every node at addrs reports cluster_state:ok.
func (a *admins) allClusterOK(ctx context.Context, addrs []string) bool {
	for _, addr := range addrs {
		info, err := a.node(addr).ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
	}
	return true
}

// allNameMaster reports whether every sentinel names addr as m's master.
func (a *admins) allNameMaster(ctx context.Context, sentinels []string, addr string) bool {
	for _, sa := range sentinels {
		got, err := a.sentinel(sa).GetMasterAddrByName(ctx, "m").Result()
		if err != nil || len(got) != 2 || got[0]+":"+got[1] != addr {
			return false
		}
	}
	return true
}

// startSentinels starts three sentinels watching master as "m" (quorum 2,
// down-after-milliseconds 1000) and waits until each knows the replica and
// the other two, so that they can elect a leader and fail over.
func startSentinels(t *testing.T, master *server) []*server {
	t.Helper()
	return startSentinelsOn(t, nil, master)
}

// startSentinelsOn is startSentinels on loopback (fn nil), or with each
// sentinel in a namespace of its own on fn.
func startSentinelsOn(t *testing.T, fn *faultNet, master *server) []*server {
	t.Helper()
	var sentinels []*server
	for i := range 3 {
		dir := t.TempDir()
		conf := dir + "/sentinel.conf"
		require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(
			"sentinel resolve-hostnames no\nsentinel monitor m %s %d 2\nsentinel down-after-milliseconds m 1000\nsentinel failover-timeout m 10000\nsentinel parallel-syncs m 1\n",
			master.host(), master.port)), 0o600))
		srv := &server{t: t, port: freePort(t), dir: dir, conf: conf}
		fn.place(srv, fmt.Sprint("sentinel", i))
		srv.start()
		t.Cleanup(srv.kill)
		sentinels = append(sentinels, srv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, srv := range sentinels {
		sc := goredis.NewSentinelClient(&goredis.Options{Addr: srv.addr(), Dialer: fn.dialer()})
		for {
			replicas, rerr := sc.Replicas(ctx, "m").Result()
			peers, perr := sc.Sentinels(ctx, "m").Result()
			if rerr == nil && perr == nil && len(replicas) == 1 && len(peers) == 2 && !strings.Contains(replicas[0]["flags"], "down") &&
				!strings.Contains(replicas[0]["flags"], "disconnected") {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("sentinel %s: replicas %v (%v), sentinels %v (%v)", srv.addr(), replicas, rerr, peers, perr)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = sc.Close()
	}
	return sentinels
}

// TestSentinelFailover kills the master of a master, a replica and three
// sentinels under load, through go-redis's failover client: once the
// sentinels have promoted the replica (it reports role:master), decisions
// must come from Redis again within failoverGoal, and be exact after. The
// store's connections find the master as the client's do, asking a
// sentinel at every dial; so decisions resume once the sentinels name the
// new master, up to a second (their INFO period) after the promotion.
// Then a manual failover back, which leaves the demoted master up a while:
// decisions must follow the sentinels within failoverGoal too.
func TestSentinelFailover(t *testing.T) {
	master := startServer(t, "--repl-diskless-sync-delay", "0")
	replica := startServer(t, "--repl-diskless-sync-delay", "0", "--replicaof", "127.0.0.1", strconv.Itoa(master.port))
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c := goredis.NewClient(&goredis.Options{Addr: replica.addr()})
		defer c.Close()
		info, err := c.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, 30*time.Second, 20*time.Millisecond, "the replica in sync")
	sentinels := startSentinels(t, master)
	sentinelAddrs := make([]string, len(sentinels))
	for i, srv := range sentinels {
		sentinelAddrs[i] = srv.addr()
	}
	fc := goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: "m", SentinelAddrs: sentinelAddrs})
	t.Cleanup(func() { _ = fc.Close() })
	s := newTestStore(t, fc, WithTimeout(failoverTimeout))
	require.Equal(t, single, s.layout)
	p := core.MustPolicy(core.PolicyConfig{Name: "failover", Algorithm: core.GCRA, Quota: 1_000_000, Period: time.Second, Burst: 1_000_000})

	adm := newAdmins(t)
	adm.allNameMaster(context.Background(), sentinelAddrs, "")
	adm.isMaster(context.Background(), replica.addr())
	load := startFailoverLoad(t, s, p, map[string][]string{master.addr(): {"a", "b", "c", "d", "e", "f"}})
	load.waitAll(t, "before the kill")
	killed := load.mark()
	failed := master.addr()
	master.kill()
	var promoted time.Time
	named := waitForServers(t, load, 20*time.Second, "the sentinels naming the replica", func(ctx context.Context) bool {
		if promoted.IsZero() && adm.isMaster(ctx, replica.addr()) {
			promoted = time.Now()
		}
		return !promoted.IsZero() && adm.allNameMaster(ctx, sentinelAddrs, replica.addr())
	})
	load.hold(t, named)
	t.Logf("killed master %s; replica %s promoted %v after the kill, named by every sentinel %v after",
		failed, replica.addr(), promoted.Sub(killed), named.Sub(killed))
	load.check(t, failed, killed, promoted)
	exact(t, s, "fresh", nil, "")

	// A manual failover back: the old master, restarted, is made a replica
	// of the new one by the sentinels, then SENTINEL FAILOVER promotes it.
	// The new master demoted stays up a while, still a master: decisions
	// must move to the promoted one within failoverGoal of the sentinels
	// naming it, not when they demote the other.
	master.start()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		info, err := adm.node(master.addr()).Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, 30*time.Second, 20*time.Millisecond, "the old master a replica in sync")
	back := startFailoverLoad(t, s, p, map[string][]string{master.addr(): {"a", "b", "c", "d", "e", "f"}})
	back.waitAll(t, "before the manual failover")
	var switched time.Time
	waitForServers(t, back, 20*time.Second, "a sentinel accepting SENTINEL FAILOVER", func(ctx context.Context) bool {
		switched = time.Now()
		return adm.sentinel(sentinelAddrs[0]).Failover(ctx, "m").Err() == nil // NOGOODSLAVE until it knows the replica well
	})
	renamed := waitForServers(t, back, 20*time.Second, "the sentinels naming the old master again", func(ctx context.Context) bool {
		return adm.allNameMaster(ctx, sentinelAddrs, master.addr())
	})
	// Scripts replicate as their effects: a replica counts no EVALSHA.
	scripts := func(ctx context.Context) int64 {
		stats, err := adm.node(master.addr()).Info(ctx, "commandstats").Result()
		if err != nil {
			return -1
		}
		_, rest, _ := strings.Cut(stats, "cmdstat_evalsha:calls=")
		n, err := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
		if err != nil {
			return 0
		}
		return n
	}
	var before int64 = -1
	landed := waitFor(t, back, 20*time.Second, "decisions on the promoted master", func(ctx context.Context) bool {
		n := scripts(ctx)
		if before < 0 {
			before = n
			return false
		}
		return n > before
	})
	back.close()
	t.Logf("manual failover: the sentinels named the old master %v after SENTINEL FAILOVER; decisions landed on it %v after that; %d connections closed for it",
		renamed.Sub(switched), landed.Sub(renamed), movedConns(s))
	within(t, back.stalls, landed.Sub(renamed), failoverGoal, "decisions on the promoted master")
	exact(t, s, "back", nil, "")
}

// movedConns is the number of connections s closed for a new master.
func movedConns(s *Store) int64 {
	if s.conns.watch == nil {
		return 0
	}
	return s.conns.watch.moved.Load()
}
