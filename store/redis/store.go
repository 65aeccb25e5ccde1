package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/core"
)

const (
	// DefaultPrefix starts every key the store writes.
	DefaultPrefix = "sluice:"
	// DefaultTimeout is the deadline of every store call (see WithTimeout).
	DefaultTimeout = 50 * time.Millisecond
	// DefaultClockGrace is added to every TTL when the store runs on the
	// caller's clock (WithClock): see WithTTLGrace.
	DefaultClockGrace = time.Minute

	// maxCachedPolicies bounds the per-policy cache; policies beyond it are
	// derived on every call (programs have a handful of policies).
	maxCachedPolicies = 4096
)

// Store is the Redis core.Store. Build it with New; it is safe for
// concurrent use and holds no resources of its own: closing the client is
// the caller's business.
type Store struct {
	sc       scripter
	layout   layout
	prefix   string
	clock    core.Clock // nil: the server's TIME
	grace    any        // ms added to TTLs, boxed once
	graceDur time.Duration
	timeout  time.Duration
	dl       *deadlines // hands out the calls' deadlines
	denies   *denyCache

	policies  sync.Map // *core.Policy -> *policyInfo
	nPolicies atomic.Int64
}

var _ core.Store = (*Store)(nil)

// layout says how the keys of one layered request may be combined in one
// script call.
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

// Option configures a Store.
type Option func(*Store) error

// WithPrefix sets the prefix of every key (default DefaultPrefix), so that
// several applications can share a Redis. It may not contain braces, which
// would take the hash tag from the keys.
func WithPrefix(prefix string) Option {
	return func(s *Store) error {
		if strings.ContainsAny(prefix, "{}") {
			return fmt.Errorf("redis: prefix %q contains a brace", prefix)
		}
		s.prefix = prefix
		return nil
	}
}

// WithClock decides on the caller's clock instead of the Redis server's
// TIME. All instances sharing a limit must then agree on the time; this is
// meant for tests (with a core.ManualClock) and for callers with a better
// clock than their Redis. Keys' TTLs are reckoned in the clock's time plus
// a grace (DefaultClockGrace, see WithTTLGrace), so that a clock that runs
// behind Redis's, or a test clock that barely moves, never sees a key expire
// before its state is full.
func WithClock(c core.Clock) Option {
	return func(s *Store) error {
		if c == nil {
			return errors.New("redis: nil clock")
		}
		s.clock = c
		if s.graceDur < 0 {
			s.graceDur = DefaultClockGrace
		}
		return nil
	}
}

// WithTTLGrace sets the time added to every key's TTL beyond the moment its
// state is back to full: zero by default with the server's time,
// DefaultClockGrace with WithClock. A longer TTL changes no decision; it
// only keeps full state a little longer.
func WithTTLGrace(d time.Duration) Option {
	return func(s *Store) error {
		if d < 0 {
			return fmt.Errorf("redis: TTL grace must not be negative, got %v", d)
		}
		s.graceDur = d
		return nil
	}
}

// WithTimeout sets the deadline of every store call (default
// DefaultTimeout): a call fails with a *core.StoreError once it passes.
// Calls share deadlines in spans of a sixteenth of d, so a call's deadline
// is between d and 17/16 of d; a caller's context with an earlier deadline
// is honoured. See the package documentation for the client options that
// keep this deadline.
func WithTimeout(d time.Duration) Option {
	return func(s *Store) error {
		if d <= 0 {
			return fmt.Errorf("redis: timeout must be positive, got %v", d)
		}
		s.timeout = d
		return nil
	}
}

// WithDenyCache remembers up to maxKeys denials locally: once Redis has
// denied cost units on a key until RetryAfter, the same request on that key
// is denied without a round trip until then, with RetryAfter and ResetAfter
// shortened by the time elapsed (Remaining is the one Redis reported).
//
// It is off by default because it is exact only while nobody gives units
// back: a refund (negative Adjust, a cancelled reservation) or a Reset on
// another instance can free the key early, and this instance would go on
// denying until the remembered time. Local refunds and resets do clear the
// entry. Requests of another cost, and requests under another policy, are
// never answered from it.
//
// In TakeAll, a request with any layer remembered as denied is denied
// locally: that layer reports its remembered decision and the other layers
// report Allowed with their Limit, Remaining and ResetAfter left at zero,
// unknown since Redis was not asked.
func WithDenyCache(maxKeys int) Option {
	return func(s *Store) error {
		if maxKeys < 1 {
			return fmt.Errorf("redis: deny cache size must be positive, got %d", maxKeys)
		}
		s.denies = newDenyCache(maxKeys)
		return nil
	}
}

// New returns a Store deciding on client: a *goredis.Client (single node or
// Sentinel), a *goredis.ClusterClient, or a *goredis.Ring.
func New(client goredis.UniversalClient, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, errors.New("redis: nil client")
	}
	s := &Store{prefix: DefaultPrefix, timeout: DefaultTimeout, graceDur: -1}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	if s.graceDur < 0 {
		s.graceDur = 0
	}
	s.grace = int64((s.graceDur + time.Millisecond - 1) / time.Millisecond)
	s.dl = newDeadlines(s.timeout)

	var deadlines bool // whether the client holds socket I/O to ctx deadlines
	switch c := client.(type) {
	case *goredis.Client:
		s.layout, deadlines = single, c.Options().ContextTimeoutEnabled
	case *goredis.ClusterClient:
		s.layout, deadlines = bySlot, c.Options().ContextTimeoutEnabled
	case *goredis.Ring:
		s.layout, deadlines = byTag, c.Options().ContextTimeoutEnabled
	default:
		s.layout = byTag
	}
	s.sc = clientScripter{client}
	if !deadlines {
		s.sc = boundedScripter{s.sc}
	}
	return s, nil
}

// opAdjust is the adjust operation's script argument, boxed once.
var opAdjust any = "a"

// Take implements core.Store.
func (s *Store) Take(ctx context.Context, r core.Request) (core.Decision, error) {
	if err := core.CheckRequest(r); err != nil {
		return core.Decision{}, err
	}
	pi := s.info(r.Policy)
	var sent time.Time
	if s.denies != nil {
		sent = s.localNow()
		if d, ok := s.denies.get(pi.fp, r.Key, r.Cost, sent); ok {
			d.Policy = r.Policy
			return d, nil
		}
	}
	cmd := newCommand(1, 6)
	cmd = append(cmd, pi.key(r.Key))
	cmd = append(cmd, pi.args[:]...)
	cmd = s.clockArgs(append(cmd, r.Cost))

	ctx, cancel := s.dl.with(ctx)
	out, err := s.sc.run(ctx, takeScripts[r.Policy.Algorithm()], cmd)
	cancel()
	if err == nil {
		err = out.check(4)
	}
	if err != nil {
		return core.Decision{}, &core.StoreError{Op: "take", Err: err}
	}
	d := decision(r.Policy, out)
	if s.denies != nil {
		s.denies.put(pi.fp, r.Key, r.Cost, d, sent)
	}
	return d, nil
}

// TakeAll implements core.Store. On one server (or when every key falls in
// one slot) one script decides every layer, as store/memory does. On a
// Cluster, see the package documentation.
func (s *Store) TakeAll(ctx context.Context, rs []core.Request, ds []core.Decision) error {
	if err := core.CheckRequests(rs, ds); err != nil {
		return err
	}
	if len(rs) == 0 {
		return nil
	}
	infos := make([]*policyInfo, len(rs))
	for i, r := range rs {
		infos[i] = s.info(r.Policy)
	}
	var sent time.Time
	if s.denies != nil {
		sent = s.localNow()
		if s.deniedLocally(rs, ds, infos, sent) {
			return nil
		}
	}
	keys := make([]string, len(rs))
	for i, r := range rs {
		keys[i] = infos[i].key(r.Key)
	}

	ctx, cancel := s.dl.with(ctx)
	defer cancel()
	var err error
	if groups := s.groups(keys); groups == nil {
		err = s.takeAllOne(ctx, rs, ds, keys, infos)
	} else {
		err = s.takeAllGroups(ctx, rs, ds, keys, infos, groups)
	}
	if err != nil {
		return &core.StoreError{Op: "take-all", Err: err}
	}
	if s.denies != nil {
		for i, r := range rs {
			s.denies.put(infos[i].fp, r.Key, r.Cost, ds[i], sent)
		}
	}
	return nil
}

// takeAllOne decides every layer in one script call.
func (s *Store) takeAllOne(ctx context.Context, rs []core.Request, ds []core.Decision, keys []string, infos []*policyInfo) error {
	out, err := s.sc.run(ctx, scriptFor(rs, nil), s.layerCommand(nil, 0, rs, keys, infos, nil, 1))
	if err == nil {
		err = out.check(4 * len(rs))
	}
	if err != nil {
		return err
	}
	for i, r := range rs {
		ds[i] = decision(r.Policy, out[4*i:])
	}
	return nil
}

// groups returns, for each key, the index of the script call it goes to,
// or nil if one call can take them all.
func (s *Store) groups(keys []string) []int {
	if s.layout == single || len(keys) == 1 {
		return nil
	}
	groups := make([]int, len(keys))
	slots := make([]int, len(keys))
	firsts := make([]int, 0, len(keys)) // the first key of each group
	for i, k := range keys {
		if s.layout == bySlot {
			slots[i] = slot(k)
		}
		groups[i] = -1
		for g, f := range firsts {
			if (s.layout == bySlot && slots[f] == slots[i]) || (s.layout == byTag && hashTag(keys[f]) == hashTag(k)) {
				groups[i] = g
				break
			}
		}
		if groups[i] < 0 {
			groups[i] = len(firsts)
			firsts = append(firsts, i)
		}
	}
	if len(firsts) == 1 {
		return nil
	}
	return groups
}

// takeAllGroups decides a layered request whose keys fall in several slots:
// one script per slot, all in one pipelined round trip. When a layer is
// denied, a second round trip (this path only) gives back what the groups
// that passed took, and replays the groups that denied after the first
// denial so that every layer is decided as core's order would: the layers
// after the first denial only peek. Decisions then equal store/memory's.
func (s *Store) takeAllGroups(ctx context.Context, rs []core.Request, ds []core.Decision, keys []string, infos []*policyInfo, groups []int) error {
	n := 0
	for _, g := range groups {
		n = max(n, g+1)
	}
	members := make([][]int, n)
	for i, g := range groups {
		members[g] = append(members[g], i)
	}
	calls := make([]*call, n)
	for g, idx := range members {
		calls[g] = s.groupCall(nil, 0, rs, keys, infos, idx, 1)
	}
	_ = s.sc.runAll(ctx, calls)

	var failed error
	first := len(rs) // the first denied layer
	firstDenied := make([]int, n)
	for g, c := range calls {
		firstDenied[g] = -1
		if c.err == nil {
			c.err = c.out.check(4 * len(members[g]))
		}
		if c.err != nil {
			failed = errors.Join(failed, c.err)
			continue
		}
		for j, i := range members[g] {
			ds[i] = decision(rs[i].Policy, c.out[4*j:])
			if !ds[i].Allowed && firstDenied[g] < 0 {
				firstDenied[g] = i
				first = min(first, i)
			}
		}
	}
	if failed == nil && first == len(rs) {
		return nil
	}

	// Second round trip: refund the groups that took; replay the groups
	// that denied later than the first denial with layers between the two.
	var again []*call
	var whose []int
	for g, c := range calls {
		idx := members[g]
		switch {
		case c.err != nil:
			continue
		case firstDenied[g] < 0:
			again = append(again, s.groupCall(opAdjust, 0, rs, keys, infos, idx, -1))
		case failed == nil && firstDenied[g] > first && between(idx, first, firstDenied[g]):
			before := 0
			for _, i := range idx {
				if i < first {
					before++
				}
			}
			again = append(again, s.groupCall(nil, before+1, rs, keys, infos, idx, 1))
		default:
			continue
		}
		whose = append(whose, g)
	}
	if len(again) > 0 {
		_ = s.sc.runAll(ctx, again)
	}
	if failed != nil {
		return failed
	}
	// The request is denied whatever the second round trip's fate. A refund
	// that failed leaves its units taken until the keys' TTL, and its layers
	// report their standing after the take.
	for k, c := range again {
		g := whose[k]
		idx := members[g]
		if c.err != nil || c.out.check(4*len(idx)) != nil {
			continue
		}
		for j, i := range idx {
			ds[i] = decision(rs[i].Policy, c.out[4*j:])
			if firstDenied[g] < 0 {
				ds[i].Allowed = true // a refunded layer reports its standing
			}
		}
	}
	return nil
}

// between reports whether any of idx lies strictly between lo and hi.
func between(idx []int, lo, hi int) bool {
	for _, i := range idx {
		if i > lo && i < hi {
			return true
		}
	}
	return false
}

// groupCall builds the script call of the requests idx, with their costs
// multiplied by sign.
func (s *Store) groupCall(op any, peekFrom int, rs []core.Request, keys []string, infos []*policyInfo, idx []int, sign int64) *call {
	return &call{script: scriptFor(rs, idx), cmd: s.layerCommand(op, peekFrom, rs, keys, infos, idx, sign)}
}

// layerCommand lays out the script call of the requests idx (all if nil),
// with their costs multiplied by sign: the keys; four arguments per layer;
// the operation unless it is a plain take (op nil, peekFrom 0); the clock.
func (s *Store) layerCommand(op any, peekFrom int, rs []core.Request, keys []string, infos []*policyInfo, idx []int, sign int64) []any {
	n := len(rs)
	if idx != nil {
		n = len(idx)
	}
	at := func(j int) int {
		if idx != nil {
			return idx[j]
		}
		return j
	}
	cmd := newCommand(n, 4*n+3)
	for j := range n {
		cmd = append(cmd, keys[at(j)])
	}
	for j := range n {
		i := at(j)
		cmd = append(cmd, infos[i].args[:]...)
		cmd = append(cmd, sign*rs[i].Cost)
	}
	if peekFrom > 0 {
		op = "t" + strconv.Itoa(peekFrom)
	}
	if op != nil {
		cmd = append(cmd, op)
	}
	return s.clockArgs(cmd)
}

// deniedLocally answers a layered request from the deny cache if any of its
// layers is remembered as denied.
func (s *Store) deniedLocally(rs []core.Request, ds []core.Decision, infos []*policyInfo, now time.Time) bool {
	hit := -1
	var d core.Decision
	for i, r := range rs {
		var ok bool
		if d, ok = s.denies.get(infos[i].fp, r.Key, r.Cost, now); ok {
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
	if err := core.CheckAdjust(r); err != nil {
		return core.Decision{}, err
	}
	pi := s.info(r.Policy)
	if s.denies != nil && r.Cost < 0 {
		s.denies.forget(pi.fp, r.Key)
	}
	cmd := newCommand(1, 7)
	cmd = append(cmd, pi.key(r.Key))
	cmd = append(cmd, pi.args[:]...)
	cmd = s.clockArgs(append(cmd, r.Cost, opAdjust))

	ctx, cancel := s.dl.with(ctx)
	out, err := s.sc.run(ctx, algScripts[r.Policy.Algorithm()], cmd)
	cancel()
	if err == nil {
		err = out.check(4)
	}
	if err != nil {
		return core.Decision{}, &core.StoreError{Op: "adjust", Err: err}
	}
	return decision(r.Policy, out), nil
}

// Reset implements core.Store.
func (s *Store) Reset(ctx context.Context, key string, p *core.Policy) error {
	if p == nil {
		return core.ErrNoPolicy
	}
	pi := s.info(p)
	if s.denies != nil {
		s.denies.forget(pi.fp, key)
	}
	ctx, cancel := s.dl.with(ctx)
	_, err := s.sc.run(ctx, resetScript, append(newCommand(1, 0), pi.key(key)))
	cancel()
	if err != nil {
		return &core.StoreError{Op: "reset", Err: err}
	}
	return nil
}

// Preload loads the store's scripts into Redis (every master of a Cluster,
// every shard of a Ring), so that no decision pays for sending a script.
// It is optional: without it, the first call of each script on each server
// is answered NOSCRIPT and sent again as EVAL, once.
func (s *Store) Preload(ctx context.Context) error {
	scripts := append([]*script{genericScript, resetScript, takeScripts[core.GCRA], takeScripts[core.TokenBucket]}, algScripts[core.TokenBucket:]...)
	for _, sc := range scripts {
		if err := s.sc.load(ctx, sc); err != nil {
			return &core.StoreError{Op: "preload", Err: err}
		}
	}
	return nil
}

// Key returns the Redis key holding the state of key under p, for
// inspection and tests.
func (s *Store) Key(key string, p *core.Policy) string { return s.info(p).key(key) }

// info returns the policy's derived data, cached per policy.
func (s *Store) info(p *core.Policy) *policyInfo {
	if v, ok := s.policies.Load(p); ok {
		return v.(*policyInfo)
	}
	pi := newPolicyInfo(s.prefix, p)
	if s.nPolicies.Load() < maxCachedPolicies {
		if _, loaded := s.policies.LoadOrStore(p, pi); !loaded {
			s.nPolicies.Add(1)
		}
	}
	return pi
}

// clockArgs appends the caller's time in µs and the TTL grace to a
// script's arguments when the store runs on the caller's clock; without
// them the script reads the server's TIME.
func (s *Store) clockArgs(cmd []any) []any {
	if s.clock == nil {
		return cmd
	}
	return append(cmd, max(s.clock.Now().UnixMicro(), 1), s.grace)
}

// localNow is the deny cache's time.
func (s *Store) localNow() time.Time {
	if s.clock != nil {
		return s.clock.Now()
	}
	return time.Now()
}

// decision reads one layer's four integers.
func decision(p *core.Policy, r reply) core.Decision {
	return core.Decision{
		Policy:     p,
		Allowed:    r.int(0) == 1,
		Impossible: r.int(0) == 2,
		Limit:      p.Burst(),
		Remaining:  r.int(1),
		ResetAfter: time.Duration(r.int(2)) * time.Microsecond,
		RetryAfter: time.Duration(r.int(3)) * time.Microsecond,
	}
}
