package redisstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/redis/internal/netns"
)

// The fault suite (TestFaults) runs Redis on a real network: every server,
// and the test's clients, in a network namespace of its own, joined through
// a bridge by veth pairs (netns.Net), and injects faults into the packets
// between them: a link taken down (a silent partition: packets vanish, no
// reset, connections hang), packets dropped one way or at random
// (nftables), and delay (tc netem where the kernel has it, else a delay
// line in the clients' namespace). Through each fault, load runs through
// every failure mode at once, each on a key of its own drained before the
// fault, and the suite counts what each admitted while the fault lasted
// against what the limit allows in that time, and how soon decisions came
// from Redis again once it ended. store/redis/FAULTS.md holds its figures.
//
//	cd store/redis && go test ./redisstore -run TestFaults -count=1 -v
//
// It needs root, iproute2 and redis-server; nftables for the faults that
// drop packets; it skips, saying why, where they are missing, and in
// -short mode. SLUICE_FAULTS_OUT names a file to write its table to.

// faultPolicy is every mode's limit: 20 a second, burst 40; small, so that
// a few seconds' over-admission shows against it.
var faultPolicy = core.MustPolicy(core.PolicyConfig{Name: "fault", Algorithm: core.TokenBucket, Quota: 20, Period: time.Second, Burst: 40})

const (
	faultDeadline  = 100 * time.Millisecond // the stores' WithTimeout
	faultInstances = 4                      // instances of the fallback and lease modes
	faultLease     = 5                      // WithLease's size
	faultShards    = 4                      // WithSplit's n
	faultWorkers   = 2                      // goroutines per limiter
)

// faultNet is the fault suite's network: a namespace for the test's clients
// and one for each server. A nil *faultNet is loopback, for the helpers
// that start servers either way.
type faultNet struct {
	net    *netns.Net
	client *netns.NS
}

// newFaultNet makes the suite's network, removed when the test ends, or
// skips the test, saying why, where namespaces cannot be made.
func newFaultNet(t *testing.T) *faultNet {
	t.Helper()
	if err := netns.Available(); err != nil {
		t.Skipf("the fault suite needs network namespaces, which this machine does not allow (%v); skipping", err)
	}
	if n, err := netns.Sweep(); err != nil {
		t.Logf("sweeping namespaces left by killed tests: %v", err)
	} else if n > 0 {
		t.Logf("removed %d namespaces left by killed tests", n)
	}
	n, err := netns.New()
	require.NoError(t, err)
	fn := &faultNet{net: n}
	// Registered first, so run last: the servers in the namespaces are
	// killed by then.
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("removing the fault suite's namespaces: %v", err)
		}
	})
	fn.client, err = n.Add("client")
	require.NoError(t, err)
	return fn
}

// place puts srv in a namespace of its own, reached from the clients'; on
// loopback (fn nil) it leaves srv there.
func (fn *faultNet) place(srv *server, name string) {
	if fn == nil {
		return
	}
	ns, err := fn.net.Add(name)
	require.NoError(srv.t, err)
	srv.ns, srv.dial = ns, fn.client.Dial
}

// dialer dials from the clients' namespace; nil on loopback.
func (fn *faultNet) dialer() dialFunc {
	if fn == nil {
		return nil
	}
	return fn.client.Dial
}

// command runs name in the clients' namespace, or on the host on loopback.
func (fn *faultNet) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if fn == nil {
		return exec.CommandContext(ctx, name, args...)
	}
	return fn.client.CommandContext(ctx, name, args...)
}

// fault is a fault injected and healed.
type fault struct {
	name    string
	length  time.Duration
	inject  func() error
	heal    func() error
	skipped string // why it cannot run here, if it cannot
	// failedOver, if set, reports when Redis has completed a failover the
	// fault caused (the cluster ok, the sentinels agreeing), polled while
	// it lasts.
	failedOver func(ctx context.Context) bool
}

// faultMode is a failure mode under load: its limiters, the key they
// share, and what the load counted, by the phase a call started in (0
// before the fault, 1 while it lasted, 2 after).
type faultMode struct {
	name string
	// bound is the documented over-admission of a fault of length T, in
	// units; nil: none.
	bound                             func(rate float64, length time.Duration) float64
	boundDoc                          string
	limiters                          []*core.Limiter
	key                               string
	admitted, denied, degraded, calls [3]atomic.Int64
	degradedAdmitted                  atomic.Int64 // admitted by the failure mode while the fault lasted
	errs                              atomic.Int64
	// firstRedis[k] is when the first decision from Redis came (ns since
	// the run's base) among the calls started after mark k.
	firstRedis [2]atomic.Int64
}

// faultRun is the load of one fault.
type faultRun struct {
	base  time.Time
	phase atomic.Int32
	marks [2]atomic.Int64 // ns since base: 0, the fault healed; 1, its failover done
	modes []*faultMode
	stop  chan struct{}
	wg    sync.WaitGroup
}

const (
	markHealed = iota
	markFailedOver
)

func (r *faultRun) since() int64 { return max(int64(time.Since(r.base)), 1) }

func (r *faultRun) run(m *faultMode, l *core.Limiter) {
	req := core.Request{Key: m.key, Policy: faultPolicy, Cost: 1}
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		ph := r.phase.Load()
		start := r.since()
		d, err := l.Take(context.Background(), req)
		end := r.since()
		switch {
		case err != nil:
			m.errs.Add(1)
		default:
			m.calls[ph].Add(1)
			switch {
			case d.Allowed:
				m.admitted[ph].Add(1)
			case !d.Degraded:
				m.denied[ph].Add(1)
			}
			if d.Degraded {
				m.degraded[ph].Add(1)
				if d.Allowed && ph == 1 {
					m.degradedAdmitted.Add(1)
				}
			} else if d.Limit > 0 {
				for k := range r.marks {
					if mk := r.marks[k].Load(); mk != 0 && start >= mk {
						m.firstRedis[k].CompareAndSwap(0, end)
					}
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// faultRow is one line of the suite's table.
type faultRow struct {
	topology, fault, mode  string
	length                 time.Duration
	admitted, degraded     int64 // admitted in all; of those, by the failure mode
	allowed, over          float64
	bound                  string
	boundUnits             float64       // -1: none
	resumed, afterFailover time.Duration // -1: not measured
}

// faultTable collects the suite's rows.
type faultTable struct {
	mu   sync.Mutex
	rows []faultRow
}

func (ft *faultTable) add(r faultRow) {
	ft.mu.Lock()
	ft.rows = append(ft.rows, r)
	ft.mu.Unlock()
}

func (ft *faultTable) markdown() string {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	var b strings.Builder
	b.WriteString("| topology | fault | mode | admitted in the fault (by the failure mode) | the limit allows | over-admission | documented bound | resumed after the fault ended |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---|---|\n")
	for _, r := range ft.rows {
		resumed := fmtResume(r.resumed)
		if r.afterFailover >= 0 {
			resumed += fmt.Sprintf(" (%s after the failover)", fmtResume(r.afterFailover))
		}
		bound := r.bound
		if r.boundUnits >= 0 {
			bound = fmt.Sprintf("%.0f: %s", r.boundUnits, r.bound)
		}
		fmt.Fprintf(&b, "| %s | %s (%.1fs) | %s | %d (%d) | %.0f | %+.0f | %s | %s |\n",
			r.topology, r.fault, r.length.Seconds(), r.mode, r.admitted, r.degraded, r.allowed, r.over, bound, resumed)
	}
	return b.String()
}

func fmtResume(d time.Duration) string {
	if d < 0 {
		return "before it ended"
	}
	return d.Round(time.Millisecond).String()
}

// TestFaults is the fault suite (see above).
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault suite takes a minute or two; skipping in -short mode")
	}
	requireBinaries(t, "redis-server", "redis-cli")
	fn := newFaultNet(t)
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("load average before: %s", strings.TrimSpace(string(load)))
	caps := probeFaults(t)
	table := &faultTable{}

	t.Run("Single", func(t *testing.T) { singleFaults(t, fn, caps, table) })
	t.Run("Sentinel", func(t *testing.T) { sentinelFaults(t, fn, table) })
	t.Run("Cluster", func(t *testing.T) { clusterFaults(t, fn, caps, table) })

	load, _ = os.ReadFile("/proc/loadavg")
	t.Logf("load average after: %s", strings.TrimSpace(string(load)))
	md := table.markdown()
	t.Logf("over-admission while each fault lasted, by failure mode:\n%s", md)
	if out := os.Getenv("SLUICE_FAULTS_OUT"); out != "" {
		require.NoError(t, os.WriteFile(out, []byte(md), 0o644))
	}
}

// faultCaps is what this machine offers beyond taking links down.
type faultCaps struct {
	nft   error // nftables rules in a namespace, random drops included
	netem error // tc's netem qdisc
}

func probeFaults(t *testing.T) faultCaps {
	var c faultCaps
	c.nft = netns.ProbeNft(dropRules("10.77.0.250", true, true, 30))
	c.netem = netns.Probe("tc", "qdisc", "add", "dev", "eth0", "root", "netem", "delay", "1ms")
	t.Logf("faults on offer: link down yes; nftables drops %s; tc netem %s", yesOr(c.nft), yesOr(c.netem))
	return c
}

func yesOr(err error) string {
	if err == nil {
		return "yes"
	}
	return fmt.Sprintf("no (%v)", err)
}

// dropRules returns the nftables ruleset dropping, in the server's
// namespace, the packets to (out) or from (in) the clients' address, each
// with probability pct%.
func dropRules(client string, in, out bool, pct int) string {
	match := ""
	if pct < 100 {
		match = fmt.Sprintf(" numgen random mod 100 < %d", pct)
	}
	var b strings.Builder
	b.WriteString("table inet sluicefault {\n")
	if in {
		fmt.Fprintf(&b, "  chain in { type filter hook input priority 0; policy accept; ip saddr %s%s drop; }\n", client, match)
	}
	if out {
		fmt.Fprintf(&b, "  chain out { type filter hook output priority 0; policy accept; ip daddr %s%s drop; }\n", client, match)
	}
	b.WriteString("}\n")
	return b.String()
}

// nftFault is a fault of dropped packets between the clients and srv.
func nftFault(fn *faultNet, caps faultCaps, srv *server, name string, length time.Duration, in, out bool, pct int) fault {
	f := fault{name: name, length: length,
		inject: func() error { return srv.ns.Nft(dropRules(fn.client.IP, in, out, pct)) },
		heal:   func() error { return srv.ns.Run("nft", "delete", "table", "inet", "sluicefault") },
	}
	if caps.nft != nil {
		f.skipped = fmt.Sprintf("nftables is not available (%v)", caps.nft)
	}
	return f
}

// cutFault takes srv's link down.
func cutFault(fn *faultNet, srv *server, name string, length time.Duration) fault {
	return fault{name: name, length: length,
		inject: func() error { return fn.net.Cut(srv.ns) },
		heal:   func() error { return fn.net.Mend(srv.ns) },
	}
}

func singleFaults(t *testing.T, fn *faultNet, caps faultCaps, table *faultTable) {
	srv := startServerOn(t, fn, "single")
	c := goredis.NewClient(&goredis.Options{Addr: srv.addr(), Dialer: fn.dialer()})
	t.Cleanup(func() { _ = c.Close() })
	const length = 3 * time.Second
	faults := []fault{
		cutFault(fn, srv, "partition (link down)", length),
		nftFault(fn, caps, srv, "replies dropped (server to client)", length, false, true, 100),
		nftFault(fn, caps, srv, "requests dropped (client to server)", length, true, false, 100),
		nftFault(fn, caps, srv, "30% loss both ways", length, true, true, 30),
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			if f.skipped != "" {
				t.Skip(f.skipped)
			}
			runFault(t, table, "single", f, c, nil)
		})
	}

	// Delay: tc netem on the server's link where the kernel has it, else a
	// delay line in the clients' namespace that the stores of this fault
	// connect through (from the start, so that the fault changes no
	// connection).
	delay := 5 * faultDeadline / 2
	if caps.netem == nil {
		f := fault{name: fmt.Sprintf("%v delay (tc netem)", delay), length: length,
			inject: func() error {
				return srv.ns.Run("tc", "qdisc", "add", "dev", "eth0", "root", "netem", "delay", delay.String())
			},
			heal: func() error { return srv.ns.Run("tc", "qdisc", "del", "dev", "eth0", "root") },
		}
		t.Run("delay", func(t *testing.T) { runFault(t, table, "single", f, c, nil) })
		return
	}
	t.Run("delay", func(t *testing.T) {
		ln, err := fn.client.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		px := startProxyOn(t, ln, srv.addr(), fn.client.Dial)
		pc := goredis.NewClient(&goredis.Options{Addr: px.addr(), Dialer: fn.dialer()})
		t.Cleanup(func() { _ = pc.Close() })
		f := fault{name: fmt.Sprintf("%v delay (a delay line: no netem here)", delay), length: length,
			inject: func() error { px.delay.Store(int64(delay)); return nil },
			heal:   func() error { px.delay.Store(0); return nil },
		}
		runFault(t, table, "single", f, pc, nil)
	})
}

// startServerOn starts a redis-server in a namespace of its own on fn,
// stopped when the test ends.
func startServerOn(t *testing.T, fn *faultNet, name string, extra ...string) *server {
	t.Helper()
	s := &server{t: t, port: freePort(t), dir: t.TempDir(), args: extra}
	fn.place(s, name)
	s.start()
	t.Cleanup(s.kill)
	return s
}

func sentinelFaults(t *testing.T, fn *faultNet, table *faultTable) {
	master := startServerOn(t, fn, "master", "--repl-diskless-sync-delay", "0")
	replica := startServerOn(t, fn, "replica", "--repl-diskless-sync-delay", "0", "--replicaof", master.host(), fmt.Sprint(master.port))
	adm := newAdminsVia(t, fn.dialer())
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		info, err := adm.node(replica.addr()).Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, 30*time.Second, 20*time.Millisecond, "the replica in sync")
	sentinels := startSentinelsOn(t, fn, master)
	var addrs []string
	for _, s := range sentinels {
		addrs = append(addrs, s.addr())
	}
	fc := goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: "m", SentinelAddrs: addrs, Dialer: fn.dialer()})
	t.Cleanup(func() { _ = fc.Close() })
	f := cutFault(fn, master, "master partitioned (link down), replica promoted", 6*time.Second)
	f.failedOver = func(ctx context.Context) bool {
		return adm.isMaster(ctx, replica.addr()) && adm.allNameMaster(ctx, addrs, replica.addr())
	}
	runFault(t, table, "sentinel", f, fc, nil)
}

func clusterFaults(t *testing.T, fn *faultNet, caps faultCaps, table *faultTable) {
	srvs := startClusterOn(t, fn, 3, 1, 1000)
	adm := newAdminsVia(t, fn.dialer())
	byAddr := map[string]*server{}
	var addrs []string
	for _, srv := range srvs {
		addrs = append(addrs, srv.addr())
		byAddr[srv.addr()] = srv
		// Otherwise Redis itself refuses every slot while a master is
		// marked failed, until its replica takes over.
		require.NoError(t, adm.node(srv.addr()).ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err())
	}
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, Dialer: fn.dialer()})
	t.Cleanup(func() { _ = cc.Close() })

	// victim picks a master, and the faults' keys go on its slots.
	victim := func(skip string) (master, replica string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		//lint:ignore SA1019 CLUSTER SLOTS lists each range with its replicas, as the test needs; Redis 7.0 still serves it
		slots, err := cc.ClusterSlots(ctx).Result()
		require.NoError(t, err)
		for _, r := range slots {
			if r.Nodes[0].Addr != skip && len(r.Nodes) > 1 {
				return r.Nodes[0].Addr, r.Nodes[1].Addr
			}
		}
		t.Fatal("no master with a replica")
		return "", ""
	}
	onMaster := func(master string) func(s *Store, name string) string {
		nodeOf := masters(t, cc)
		return func(s *Store, name string) string {
			for i := 0; ; i++ {
				k := fmt.Sprint(name, i)
				if name != "split" {
					if nodeOf(slot(s.Key(k, faultPolicy))) == master {
						return k
					}
					continue
				}
				// A split key with shards on the master and elsewhere.
				share := s.info(faultPolicy).share
				on := 0
				for j := range faultShards {
					if nodeOf(slot(share.shardKey(k, j))) == master {
						on++
					}
				}
				if on > 0 && on < faultShards {
					return k
				}
			}
		}
	}

	first, promoted := victim("")
	f := cutFault(fn, byAddr[first], "a master partitioned (link down), its replica promoted", 5*time.Second)
	others := slices.DeleteFunc(slices.Clone(addrs), func(a string) bool { return a == first })
	f.failedOver = func(ctx context.Context) bool {
		return adm.isMaster(ctx, promoted) && adm.allClusterOK(ctx, others)
	}
	t.Run("partition", func(t *testing.T) { runFault(t, table, "cluster", f, cc, onMaster(first)) })

	// The partitioned master is back, a replica now; another master's
	// replies are dropped, which the cluster itself does not notice.
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return adm.allClusterOK(ctx, addrs)
	}, 30*time.Second, 50*time.Millisecond, "every node ok after the partition")
	second, _ := victim(promoted)
	g := nftFault(fn, caps, byAddr[second], "a master's replies dropped (to the clients only)", 3*time.Second, false, true, 100)
	t.Run("replies dropped", func(t *testing.T) {
		if g.skipped != "" {
			t.Skip(g.skipped)
		}
		runFault(t, table, "cluster", g, cc, onMaster(second))
	})
}

// runFault builds the failure modes on client, drains their keys, injects
// f, heals it, waits for decisions from Redis on every mode, and records
// and checks each mode's over-admission. keyFor, if set, names each mode's
// key (on a Cluster, on the faulty master's slots).
func runFault(t *testing.T, table *faultTable, topology string, f fault, client goredis.UniversalClient, keyFor func(s *Store, name string) string) {
	prefix := testPrefix(t, client)
	mk := func(opts ...Option) *Store {
		s, err := New(client, append([]Option{WithPrefix(prefix), WithTimeout(faultDeadline)}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	limiter := func(s *Store, opts ...core.Option) *core.Limiter {
		l, err := core.NewLimiter(s, opts...)
		require.NoError(t, err)
		return l
	}
	share, err := faultPolicy.Share(faultInstances)
	require.NoError(t, err)

	zero := func(float64, time.Duration) float64 { return 0 }
	open := &faultMode{name: "fail-open", boundDoc: "none: every request the store cannot decide"}
	open.limiters = []*core.Limiter{limiter(mk())}
	closed := &faultMode{name: "fail-closed", bound: zero, boundDoc: "none admitted without Redis"}
	closed.limiters = []*core.Limiter{limiter(mk(), core.WithFailClosed(0))}
	// WithFallback's bound is on what the fallbacks admit, n×(Burst/n+1) +
	// Rate×T, over what Redis admits meanwhile, within the limit: when
	// Redis decides nothing, n×(Burst/n+1) over the limit.
	fallback := &faultMode{name: fmt.Sprintf("fallback (%d instances)", faultInstances),
		bound: func(rate float64, length time.Duration) float64 {
			return float64(faultInstances*(share.Burst()+1)) + rate*length.Seconds()
		},
		boundDoc: fmt.Sprintf("n×(Burst/n+1) + Rate×T = %d + Rate×T", faultInstances*(share.Burst()+1))}
	leased := &faultMode{name: fmt.Sprintf("leases (%d instances, size %d)", faultInstances, faultLease),
		bound:    func(float64, time.Duration) float64 { return faultInstances * faultLease },
		boundDoc: "instances×size"}
	for range faultInstances {
		mem, err := memory.New()
		require.NoError(t, err)
		t.Cleanup(func() { _ = mem.Close() })
		fallback.limiters = append(fallback.limiters, limiter(mk(), core.WithFallback(mem, faultInstances)))
		leased.limiters = append(leased.limiters, limiter(mk(WithLease(faultPolicy, faultLease, 100*time.Millisecond))))
	}
	split := &faultMode{name: fmt.Sprintf("split keys (%d shards, fail-closed)", faultShards), bound: zero, boundDoc: "never more than the limit"}
	for range 2 {
		split.limiters = append(split.limiters, limiter(mk(WithSplit(faultPolicy, faultShards)), core.WithFailClosed(0)))
	}
	modes := []*faultMode{open, closed, fallback, leased, split}
	probe := mk(WithSplit(faultPolicy, faultShards)) // names the keys
	for _, m := range modes {
		name := strings.Fields(m.name)[0]
		m.key = name
		if keyFor != nil {
			m.key = keyFor(probe, name)
		}
	}

	r := &faultRun{base: time.Now(), modes: modes, stop: make(chan struct{})}
	stopLoad := func() {
		select {
		case <-r.stop:
		default:
			close(r.stop)
		}
		r.wg.Wait()
	}
	t.Cleanup(stopLoad)
	for _, m := range modes {
		for _, l := range m.limiters {
			for range faultWorkers {
				r.wg.Go(func() { r.run(m, l) })
			}
		}
	}
	// Drained: every mode denied by Redis, then a moment for the leases to
	// settle.
	drained := func() bool {
		for _, m := range modes {
			if m.denied[0].Load() == 0 {
				return false
			}
		}
		return true
	}
	for limit := time.Now().Add(60 * time.Second); !drained(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(limit) {
			for _, m := range modes {
				t.Logf("%s: %d calls, %d admitted, %d denied by Redis, %d degraded, %d errors",
					m.name, m.calls[0].Load(), m.admitted[0].Load(), m.denied[0].Load(), m.degraded[0].Load(), m.errs.Load())
			}
			t.Fatalf("%s: not every mode's key was drained by Redis within a minute", f.name)
		}
	}
	time.Sleep(300 * time.Millisecond)

	r.phase.Store(1)
	injected := r.since()
	require.NoError(t, f.inject())
	healed := false
	heal := func() {
		if !healed {
			healed = true
			if err := f.heal(); err != nil {
				t.Errorf("healing %s: %v", f.name, err)
			}
		}
	}
	t.Cleanup(heal)
	end := time.Now().Add(f.length)
	for time.Now().Before(end) {
		if f.failedOver != nil && r.marks[markFailedOver].Load() == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			if f.failedOver(ctx) {
				r.marks[markFailedOver].Store(r.since())
			}
			cancel()
		}
		time.Sleep(20 * time.Millisecond)
	}
	heal()
	healedAt := r.since()
	r.marks[markHealed].Store(healedAt)
	r.phase.Store(2)
	length := time.Duration(healedAt - injected)

	resumed := func() bool {
		for _, m := range modes {
			if m.firstRedis[markHealed].Load() == 0 {
				return false
			}
		}
		return true
	}
	limit := time.Now().Add(30 * time.Second)
	for !resumed() && time.Now().Before(limit) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // decisions after, on every mode
	stopLoad()

	if f.failedOver != nil && r.marks[markFailedOver].Load() == 0 {
		t.Logf("%s: the failover was not complete when the fault ended", f.name)
	}
	rate := float64(faultPolicy.Quota()) / faultPolicy.Period().Seconds()
	allowed := rate * length.Seconds()
	// Calls are counted by when they start: those Redis decided around the
	// fault's edges may add what the limit allows in two deadlines.
	slack := rate*(2*faultDeadline).Seconds() + 1
	for _, m := range modes {
		row := faultRow{topology: topology, fault: f.name, mode: m.name, length: length,
			admitted: m.admitted[1].Load(), degraded: m.degradedAdmitted.Load(), allowed: allowed, bound: m.boundDoc,
			boundUnits: -1, resumed: -1, afterFailover: -1}
		row.over = float64(row.admitted) - allowed
		first := m.firstRedis[markHealed].Load()
		if assert.NotZero(t, first, "%s: decisions from Redis resume after %s", m.name, f.name) {
			row.resumed = time.Duration(first - healedAt)
		}
		if mk := r.marks[markFailedOver].Load(); mk != 0 {
			if fo := m.firstRedis[markFailedOver].Load(); fo != 0 {
				row.afterFailover = time.Duration(fo - mk)
				if fo < healedAt {
					row.resumed = -1 // before the fault ended
				}
			}
		}
		if m.bound != nil {
			row.boundUnits = m.bound(rate, length)
			assert.LessOrEqual(t, row.over, row.boundUnits+slack, "%s: over-admission within the documented bound", m.name)
		}
		table.add(row)
		resumed := fmtResume(row.resumed)
		if row.resumed >= 0 {
			resumed += " after it ended"
		}
		if row.afterFailover >= 0 {
			resumed += fmt.Sprintf(", %v after the failover", row.afterFailover.Round(time.Millisecond))
		}
		t.Logf("%-36s %d calls in the fault, %d admitted (%d by the failure mode), limit allows %.0f: over-admission %+.0f (bound %s); resumed %s; %d errors",
			m.name, m.calls[1].Load(), row.admitted, row.degraded, allowed, row.over, m.boundDoc, resumed, m.errs.Load())
		assert.Zero(t, m.errs.Load(), "%s: the limiter answers every request", m.name)
	}
}
