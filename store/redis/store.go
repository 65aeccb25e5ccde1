package redis

import (
	"context"
	"errors"
	"fmt"
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
	// DefaultTimeout is the deadline of every store call.
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
// DefaultTimeout): a call whose context has no earlier deadline fails with
// a *core.StoreError once it passes. See the package documentation for the
// client options that keep this deadline.
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

// Script arguments boxed once.
var (
	serverTime any = int64(0)
	opTake     any = "t"
	opAdjust   any = "a"
)

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
	keys := []string{pi.key(r.Key)}
	args := make([]any, 0, 9)
	args = append(args, s.now(), s.grace, opTake)
	args = append(args, pi.args[:]...)
	args = append(args, r.Cost)

	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	out, err := s.sc.run(ctx, stepScript, keys, args)
	cancel()
	if err == nil && len(out) != 4 {
		err = fmt.Errorf("%w: %d integers", errReply, len(out))
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

	ctx, cancel := context.WithTimeout(ctx, s.timeout)
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
	args := s.layerArgs(opTake, rs, infos, nil, 1)
	out, err := s.sc.run(ctx, stepScript, keys, args)
	if err == nil && len(out) != 4*len(rs) {
		err = fmt.Errorf("%w: %d integers for %d requests", errReply, len(out), len(rs))
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
// one script per slot, all in one pipelined round trip; if any layer is
// denied (or any call fails), the groups that took give their units back in
// a second round trip, and their layers report their standing afterwards.
func (s *Store) takeAllGroups(ctx context.Context, rs []core.Request, ds []core.Decision, keys []string, infos []*policyInfo, groups []int) error {
	n := 0
	for _, g := range groups {
		n = max(n, g+1)
	}
	calls := make([]*call, n)
	members := make([][]int, n)
	for i, g := range groups {
		members[g] = append(members[g], i)
	}
	for g, idx := range members {
		calls[g] = s.groupCall(opTake, rs, keys, infos, idx, 1)
	}
	_ = s.sc.runAll(ctx, calls)

	var failed error
	denied := false
	for g, c := range calls {
		if c.err == nil && len(c.out) != 4*len(members[g]) {
			c.err = fmt.Errorf("%w: %d integers for %d requests", errReply, len(c.out), len(members[g]))
		}
		if c.err != nil {
			failed = errors.Join(failed, c.err)
			continue
		}
		for j, i := range members[g] {
			ds[i] = decision(rs[i].Policy, c.out[4*j:])
			if !ds[i].Allowed {
				denied = true
			}
		}
	}
	if failed == nil && !denied {
		return nil
	}

	// Give back what the groups that passed took.
	var refunds []*call
	var refunded []int
	for g, c := range calls {
		if c.err != nil || !groupAllowed(ds, members[g]) {
			continue
		}
		refunds = append(refunds, s.groupCall(opAdjust, rs, keys, infos, members[g], -1))
		refunded = append(refunded, g)
	}
	if len(refunds) > 0 {
		_ = s.sc.runAll(ctx, refunds)
	}
	if failed != nil {
		return failed
	}
	// The request is denied whatever the refunds' fate. A refund that failed
	// leaves its units taken until the key's TTL; its layers report the
	// standing after the take.
	for k, c := range refunds {
		idx := members[refunded[k]]
		if c.err != nil || len(c.out) != 4*len(idx) {
			continue
		}
		for j, i := range idx {
			ds[i] = decision(rs[i].Policy, c.out[4*j:])
			ds[i].Allowed = true
		}
	}
	return nil
}

func groupAllowed(ds []core.Decision, idx []int) bool {
	for _, i := range idx {
		if !ds[i].Allowed {
			return false
		}
	}
	return true
}

// groupCall builds the script call of the requests idx, with their costs
// multiplied by sign.
func (s *Store) groupCall(op any, rs []core.Request, keys []string, infos []*policyInfo, idx []int, sign int64) *call {
	c := &call{script: stepScript, keys: make([]string, len(idx))}
	for j, i := range idx {
		c.keys[j] = keys[i]
	}
	c.args = s.layerArgs(op, rs, infos, idx, sign)
	return c
}

// layerArgs returns the script arguments for the requests idx (all if nil),
// with their costs multiplied by sign.
func (s *Store) layerArgs(op any, rs []core.Request, infos []*policyInfo, idx []int, sign int64) []any {
	n := len(rs)
	if idx != nil {
		n = len(idx)
	}
	args := make([]any, 0, 3+6*n)
	args = append(args, s.now(), s.grace, op)
	for j := range n {
		i := j
		if idx != nil {
			i = idx[j]
		}
		args = append(args, infos[i].args[:]...)
		args = append(args, sign*rs[i].Cost)
	}
	return args
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
	if r.Policy == nil {
		return core.Decision{}, core.ErrNoPolicy
	}
	pi := s.info(r.Policy)
	if s.denies != nil && r.Cost < 0 {
		s.denies.forget(pi.fp, r.Key)
	}
	keys := []string{pi.key(r.Key)}
	args := make([]any, 0, 9)
	args = append(args, s.now(), s.grace, opAdjust)
	args = append(args, pi.args[:]...)
	args = append(args, r.Cost)

	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	out, err := s.sc.run(ctx, stepScript, keys, args)
	cancel()
	if err == nil && len(out) != 4 {
		err = fmt.Errorf("%w: %d integers", errReply, len(out))
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
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	_, err := s.sc.run(ctx, resetScript, []string{pi.key(key)}, nil)
	cancel()
	if err != nil {
		return &core.StoreError{Op: "reset", Err: err}
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

// now returns the time argument of a script: the caller's clock in µs, or
// 0 for the server's TIME.
func (s *Store) now() any {
	if s.clock == nil {
		return serverTime
	}
	return max(s.clock.Now().UnixMicro(), 1)
}

// localNow is the deny cache's time.
func (s *Store) localNow() time.Time {
	if s.clock != nil {
		return s.clock.Now()
	}
	return time.Now()
}

// decision reads one layer's four integers.
func decision(p *core.Policy, v []int64) core.Decision {
	return core.Decision{
		Policy:     p,
		Allowed:    v[0] == 1,
		Impossible: v[0] == 2,
		Limit:      p.Burst(),
		Remaining:  v[1],
		ResetAfter: time.Duration(v[2]) * time.Microsecond,
		RetryAfter: time.Duration(v[3]) * time.Microsecond,
	}
}
