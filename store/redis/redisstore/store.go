package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/storekit"
)

// Store is the Redis core.Store. Build it with New and Close it when done;
// it is safe for concurrent use.
type Store struct {
	pipe     *pipe
	fleet    *fleet // a Cluster's pipes by master, or nil (see fleet)
	conns    *conns
	topo     *topology
	layout   layout
	prefix   string
	clock    core.Clock // nil: the server's TIME
	graceArg any        // the scripts' first argument: the grace in ms, or "s"
	graceDur time.Duration
	timeout  time.Duration
	connWait time.Duration // how long a lane waits on one round trip
	batch    int
	nconns   int
	dl       *deadlines
	denies   *denyCache
	log      *slog.Logger

	policies  sync.Map // *core.Policy -> *policyInfo
	nPolicies atomic.Int64
	// configured holds the infos of the policies options split or lease,
	// by fingerprint; setups make them in New.
	configured map[uint64]*policyInfo
	setups     []func()
	leases     *leases // nil without leased policies
	closeOnce  sync.Once

	local     *memory.Store // Local: what a limiter decides on while Redis cannot
	addrs     string        // the client's addresses, for messages
	startWait time.Duration // WithRequireReachable's wait; 0: probe in the background
	started   chan struct{} // closed once the start probe is done
	stopProbe context.CancelFunc
	closing   atomic.Bool
}

var _ core.Store = (*Store)(nil)

// layout says how the keys of one batch may be combined in one script call.
type layout uint8

const (
	// single: one server holds every key (a plain client, Sentinel).
	single layout = iota
	// bySlot: Redis Cluster; keys in one hash slot share a script call.
	bySlot
	// byTag: a client sharding by hash tag (Ring, or unknown): keys with
	// one tag share a script call.
	byTag
)

// New returns a Store deciding on client: a *goredis.Client (single node or
// Sentinel), a *goredis.ClusterClient, or a *goredis.Ring. The store makes
// connections of its own from the client's options; the client stays the
// caller's to use and close. Close the store to close its connections.
func New(client goredis.UniversalClient, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, errors.New("redisstore: nil client")
	}
	s := &Store{prefix: DefaultPrefix, timeout: DefaultTimeout, graceDur: -1,
		batch: DefaultBatch, nconns: DefaultConns, log: slog.Default()}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	var err error
	if s.addrs, err = clientAddrs(client); err != nil {
		return nil, err
	}
	if err := s.newLocal(); err != nil {
		return nil, err
	}
	if s.graceDur < 0 {
		s.graceDur = 0
	}
	s.graceArg = "s"
	if s.clock != nil {
		s.graceArg = int64((s.graceDur + time.Millisecond - 1) / time.Millisecond)
	}
	if s.connWait == 0 {
		s.connWait = max(time.Second, 8*s.timeout)
	}
	var shortest time.Duration
	for _, setup := range s.setups {
		setup()
	}
	for _, pi := range s.configured {
		if pi.lease != nil && (shortest == 0 || pi.lease.interval < shortest) {
			shortest = pi.lease.interval
		}
	}
	s.dl = newDeadlines(s.timeout)
	switch client.(type) {
	case *goredis.Client:
		s.layout = single
	case *goredis.ClusterClient:
		s.layout = bySlot
	default:
		s.layout = byTag
	}
	// On one server a round trip takes up to DefaultBatch operations even
	// when a script call holds fewer (WithBatch below it): the calls go
	// pipelined (see send).
	perTrip := s.batch
	if s.layout == single {
		perTrip = max(s.batch, DefaultBatch)
	}
	c := pipeConfig{
		lanes:    s.nconns,
		maxLanes: burstLanes * s.nconns,
		maxBatch: perTrip,
		patience: s.timeout / 4,
		send:     s.send,
		inline:   s.layout == single,
	}
	s.conns = newConns(client, c.maxLanes, s.connWait)
	s.topo = newTopology(s.conns.ownCluster())
	if s.layout == single {
		c.ping = func(ctx context.Context) error { return s.conns.client.Ping(ctx).Err() }
	}
	s.pipe = newPipe(c)
	if cc, ok := s.conns.ownCluster().(*goredis.ClusterClient); ok {
		s.fleet = newFleet(cc, c, s.pipe)
	}
	s.conns.waiting = s.pipe.down.Load
	if shortest > 0 {
		s.leases = newLeases(s, shortest)
	}
	if s.startWait > 0 {
		if err := s.checkReachable(s.startWait); err != nil {
			_ = s.Close()
			return nil, err
		}
	} else {
		s.probeStart()
	}
	return s, nil
}

// Close stops the store: leases give back what they hold (as far as Redis
// answers within the connection timeout), calls waiting fail, and its connections
// close, which ends the round trips on their way. It does not close the
// client New was given. Close is idempotent.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		defer s.stopStart() // once the connections are closed: a ping to a hung Redis ends with them
		defer s.local.Close()
		if s.leases != nil {
			s.leases.close()
		}
		var others []*pipe
		if s.fleet != nil {
			others = s.fleet.stop()
		}
		s.pipe.close(func() { err = s.conns.close() })
		for _, p := range others {
			p.lanes.Wait()
		}
	})
	return err
}

// Take implements core.Store.
func (s *Store) Take(ctx context.Context, r core.Request) (core.Decision, error) {
	if err := storekit.CheckRequest(r); err != nil {
		return core.Decision{}, err
	}
	pi := s.info(r.Policy)
	if pi.lease != nil {
		if d, ok := s.leases.take(ctx, r, pi); ok {
			return d, nil
		}
	}
	var sent time.Time
	if s.denies != nil {
		sent = s.localNow()
		if d, ok := s.denies.get(pi.fp, r.Key, r.Cost, sent); ok {
			d.Policy = r.Policy
			return d, nil
		}
	}
	o := s.pipe.get(opTake, s.nowArg())
	o.layers = append(o.layers, layerOf(pi, r.Key, r.Cost))
	if err := s.do(ctx, o); err != nil {
		if pi.lease != nil {
			// A leased policy the lease could not decide (see leases.take)
			// still gets its answer, not the failure mode's.
			return unanswered(r.Policy), nil
		}
		return core.Decision{}, &core.StoreError{Op: "take", Err: err}
	}
	d := decisionOf(r.Policy, pi, o.out)
	s.pipe.put(o)
	if s.denies != nil {
		s.denies.put(pi.fp, r.Key, r.Cost, d, sent)
	}
	return d, nil
}

// TakeAll implements core.Store: every layer is granted and taken, or none
// takes anything, on one server and across a Cluster's slots alike.
func (s *Store) TakeAll(ctx context.Context, rs []core.Request, ds []core.Decision) error {
	if err := storekit.CheckRequests(rs, ds); err != nil {
		return err
	}
	if len(rs) == 0 {
		return nil
	}
	if s.leases != nil {
		for _, r := range rs {
			if s.info(r.Policy).lease != nil {
				return s.takeAllLeased(ctx, rs, ds)
			}
		}
	}
	return s.takeAll(ctx, rs, ds)
}

// takeAll is TakeAll for layers Redis decides.
func (s *Store) takeAll(ctx context.Context, rs []core.Request, ds []core.Decision) error {
	var sent time.Time
	if s.denies != nil {
		sent = s.localNow()
		if s.deniedLocally(rs, ds, sent) {
			return nil
		}
	}
	o := s.pipe.get(opTake, s.nowArg())
	for _, r := range rs {
		o.layers = append(o.layers, layerOf(s.info(r.Policy), r.Key, r.Cost))
	}
	if err := s.do(ctx, o); err != nil {
		return &core.StoreError{Op: "take-all", Err: err}
	}
	for i, r := range rs {
		ds[i] = decisionOf(r.Policy, s.info(r.Policy), o.out[4*i:])
	}
	s.pipe.put(o)
	if s.denies != nil {
		for i, r := range rs {
			s.denies.put(s.info(r.Policy).fp, r.Key, r.Cost, ds[i], sent)
		}
	}
	return nil
}

// deniedLocally answers a layered request from the deny cache if any of its
// layers is remembered as denied.
func (s *Store) deniedLocally(rs []core.Request, ds []core.Decision, now time.Time) bool {
	hit := -1
	var d core.Decision
	for i, r := range rs {
		var ok bool
		if d, ok = s.denies.get(s.info(r.Policy).fp, r.Key, r.Cost, now); ok {
			hit = i
			break
		}
	}
	if hit < 0 {
		return false
	}
	for i, r := range rs {
		ds[i] = core.Decision{Policy: r.Policy, Allowed: true, Limit: r.Policy.Burst()}
	}
	d.Policy = rs[hit].Policy
	ds[hit] = d
	return true
}

// Adjust implements core.Store.
func (s *Store) Adjust(ctx context.Context, r core.Request) (core.Decision, error) {
	if err := storekit.CheckAdjust(r); err != nil {
		return core.Decision{}, err
	}
	pi := s.info(r.Policy)
	if s.denies != nil && r.Cost < 0 {
		s.denies.forget(pi.fp, r.Key)
	}
	if pi.lease != nil && r.Cost < 0 {
		s.leases.refunded(pi, r.Key)
	}
	o := s.pipe.get(opAdjust, s.nowArg())
	o.layers = append(o.layers, layerOf(pi, r.Key, r.Cost))
	if err := s.do(ctx, o); err != nil {
		return core.Decision{}, &core.StoreError{Op: "adjust", Err: err}
	}
	d := decisionOf(r.Policy, pi, o.out)
	s.pipe.put(o)
	return d, nil
}

// Reset implements core.Store.
func (s *Store) Reset(ctx context.Context, key string, p *core.Policy) error {
	if p == nil {
		return &core.RequestError{Field: "policy", Key: key}
	}
	pi := s.info(p)
	if s.denies != nil {
		s.denies.forget(pi.fp, key)
	}
	if pi.lease != nil {
		s.leases.forget(pi, key)
	}
	o := s.pipe.get(opReset, s.nowArg())
	if pi.shards == 0 {
		o.layers = append(o.layers, layer{key: pi.key(key), info: pi})
	}
	for i := range pi.shards {
		o.layers = append(o.layers, layer{key: pi.share.shardKey(key, i), info: pi.share})
	}
	if err := s.do(ctx, o); err != nil {
		return &core.StoreError{Op: "reset", Err: err}
	}
	s.pipe.put(o)
	return nil
}

// do sends o and waits for its result until the caller's deadline: the
// store's timeout, or the caller's context's deadline if that is earlier.
// It returns o's error, or why it was given up; o is the caller's again
// only when do returns nil.
func (s *Store) do(ctx context.Context, o *op) error {
	now := time.Now()
	sp := s.dl.current(now)
	watch := context.Background()
	if d, ok := ctx.Deadline(); ok && d.Before(sp.deadline) {
		watch = ctx
	}
	deadline := sp.deadline
	if d, ok := watch.Deadline(); ok {
		deadline = d
	}
	p := s.pipe
	if s.fleet != nil {
		o.ictx = inlineCtx{Context: watch, deadline: deadline}
		p = s.fleet.pipeOf(&o.ictx, o)
		o.ictx = inlineCtx{}
	}
	if err := p.do(o, now, sp.done, deadline, watch); err != nil {
		if s.fleet != nil && errors.Is(err, context.DeadlineExceeded) {
			// A master that keeps its callers waiting may have failed
			// over: no reply says so (see topology).
			s.topo.saw(err)
		}
		return err
	}
	if o.err != nil {
		err := o.err
		s.pipe.put(o)
		return ownCause(ctx, pastDeadline(watch, err, sp.deadline))
	}
	return nil
}

// ownCause returns err as the caller's error: a round trip canceled while
// the caller's context is not is one the store cut short when Redis stopped
// answering (another round trip failed), which is what the caller is told,
// never a cancellation it did not make.
func ownCause(ctx context.Context, err error) error {
	if errors.Is(err, context.Canceled) && ctx.Err() == nil {
		return fmt.Errorf("%w (the round trip carrying this request was cut short)", errDown)
	}
	return err
}

// pipeOf returns the pipe that sends o (see fleet).
func (s *Store) pipeOf(ctx context.Context, o *op) *pipe {
	if s.fleet == nil {
		return s.pipe
	}
	return s.fleet.pipeOf(ctx, o)
}

// pastDeadline reports a round trip that timed out at the connection once
// the caller's deadline had passed as what it is to the caller: its deadline
// exceeded (the connection's timeouts equal the store's, so on a busy
// machine either may fire first). Other errors pass unchanged.
func pastDeadline(ctx context.Context, err error, deadline time.Time) error {
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		return err
	}
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if time.Now().Before(deadline) {
		return err
	}
	return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
}

// Preload loads the store's scripts into Redis (every master of a Cluster,
// every shard of a Ring), so that no decision pays for sending a script.
// It is optional: without it, the first call of each script on each server
// is answered NOSCRIPT and sent again as EVAL, once.
func (s *Store) Preload(ctx context.Context) error {
	for _, sc := range allScripts() {
		if err := s.load(ctx, sc); err != nil {
			return &core.StoreError{Op: "preload", Err: err}
		}
	}
	return nil
}

// Key returns the Redis key holding the state of key under p, for
// inspection and tests.
func (s *Store) Key(key string, p *core.Policy) string { return s.info(p).key(key) }

// nowArg is an operation's time: the caller's clock's in µs, or 0 for the
// server's TIME.
func (s *Store) nowArg() int64 {
	if s.clock == nil {
		return 0
	}
	return max(s.clock.Now().UnixMicro(), 1)
}

// The outcomes a script reports for a layer, its first integer, besides 0
// for a denial.
const (
	outAllowed    = 1
	outImpossible = 2
	outDelayed    = 3 // allowed after a delay (a leaky queue's turn), the fourth integer
)

// granted reports whether a layer's outcome grants its units.
func granted(outcome int64) bool { return outcome == outAllowed || outcome == outDelayed }

// decision reads one layer's four integers: outcome, remaining, reset-after
// µs, and retry-after µs, or the delay µs of a grant that waits its turn.
func decision(p *core.Policy, r []int64) core.Decision {
	d := core.Decision{
		Policy:     p,
		Allowed:    granted(r[0]),
		Impossible: r[0] == outImpossible,
		Limit:      p.Burst(),
		Remaining:  r[1],
		ResetAfter: time.Duration(r[2]) * time.Microsecond,
	}
	if r[0] == outDelayed {
		d.Delay = time.Duration(r[3]) * time.Microsecond
	} else {
		d.RetryAfter = time.Duration(r[3]) * time.Microsecond
	}
	return d
}
