package redisstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
)

// WithLease serves p's decisions from leases: this instance takes size
// units of a key's budget from Redis at once, spends them at memory speed,
// and gives back what it has not spent within interval. For a few hot,
// high-rate keys, such as a global API limit, where a round trip per
// decision is too many.
//
// A request takes its units from the key's lease; when the lease holds too
// few, the store asks Redis for another, as many units as are left up to
// size (and at least the request's cost), while the requests that come
// meanwhile wait for it. Units are taken from Redis's count when leased, so
// Redis never grants more than the limit; what leasing costs is when units
// are spent, not how many:
//
//   - Over any span of time the fleet admits at most what the limit allows
//     over that span plus the units the instances hold at its start: at
//     most instances × size more.
//   - A unit is spent at most interval (and a tick, a quarter of it) after
//     Redis counted it, or given back then.
//   - A request may be denied while other instances hold units they have
//     not spent: at most (instances − 1) × size, for at most an interval.
//   - A lease Redis denies is remembered until its RetryAfter: requests for
//     as many units or more are denied locally meanwhile, without a round
//     trip (as WithDenyCache does).
//   - While Redis is down an instance spends only what it holds, then
//     denies with a Degraded decision without figures (Limit zero: the
//     middleware answers 503), not the limiter's failure mode: a lease
//     exists to bound what the fleet spends. Units it could not give back
//     stay spendable until it can; units whose refund may or may not have
//     reached Redis (a connection lost on the way) are not spent again: the
//     limit loses them rather than counting them twice. A lease Redis
//     grants after its caller stopped waiting is held all the same.
//
// In a layered request (TakeAll), the leased layers are decided first, from
// their leases, and the others by Redis after; if any layer denies, the
// leased layers give their units back to their leases.
//
// A decision from a lease reports Redis's figures as of the last lease,
// with the units this instance still holds added to Remaining. Adjust and
// Reset go to Redis as for any policy; Reset forgets the local lease too.
// Leases taken, given back and failing are reported to the observers of the
// limiters built on the store (through the store's Observe method). Close gives back what is
// held, waiting for Redis at most the connection timeout. p is matched by its
// fingerprint; size must be 1 to p's Burst, interval positive. Leases go
// with the store's clock: the server's TIME by default.
//
// A LeakyQueue policy cannot be leased: its units are turns, one Interval
// apart, which Redis hands out in order; units spent locally would have no
// turn.
func WithLease(p *core.Policy, size int64, interval time.Duration) Option {
	return func(s *Store) error {
		if p == nil {
			return fmt.Errorf("redisstore: WithLease: nil policy")
		}
		if p.Algorithm() == core.LeakyQueue {
			return fmt.Errorf("redisstore: WithLease(%s): a leaky queue cannot be leased: its units are turns Redis hands out in order", p.Name())
		}
		if size < 1 || size > p.Burst() {
			return fmt.Errorf("redisstore: WithLease(%s): size must be 1 to the burst, %d, got %d", p.Name(), p.Burst(), size)
		}
		if interval <= 0 {
			return fmt.Errorf("redisstore: WithLease(%s): interval must be positive, got %v", p.Name(), interval)
		}
		c := &leaseConfig{size: size, interval: interval}
		return s.configure(p, func(pi *policyInfo) { pi.lease = c })
	}
}

// leaseConfig is a leased policy's WithLease.
type leaseConfig struct {
	size     int64
	interval time.Duration
}

// leases are the local leases of a store's leased policies, by policy and
// key, and the goroutine that gives back what was not spent in time.
type leases struct {
	s      *Store
	mu     sync.Mutex
	held   map[leaseKey]*lease
	obs    []core.Observer
	closed bool
	tick   time.Duration
	stop   chan struct{}
	done   chan struct{}
}

type leaseKey struct {
	fp  uint64
	key string
}

// lease is the units one instance holds of one key's budget.
type lease struct {
	mu        sync.Mutex
	units     int64
	expires   time.Time     // when the units held go back; zero if none
	last      core.Decision // Redis's answer to the last lease
	denied    time.Time     // Redis denied a lease of deniedFor units: none before this
	deniedFor int64
	deniedAs  core.Decision // and this was its denial
	acquiring chan struct{} // closed when the lease being asked for comes
	used      bool          // spent from since the last tick
	dead      bool          // out of the map: get another
}

// maxLeases bounds the keys leased at once; past it, requests are decided
// by Redis one by one.
const maxLeases = 1 << 16

// newLeases starts the leases of a store whose leased policies have the
// given shortest interval.
func newLeases(s *Store, interval time.Duration) *leases {
	m := &leases{s: s, held: make(map[leaseKey]*lease), tick: max(interval/4, time.Millisecond),
		stop: make(chan struct{}), done: make(chan struct{})}
	go m.run()
	return m
}

// Observe is how a core.Limiter built with an observer hands it to the store: the store reports its leases to o.
func (s *Store) Observe(o core.Observer) {
	if s.leases == nil || o == nil {
		return
	}
	s.leases.mu.Lock()
	s.leases.obs = append(s.leases.obs, o)
	s.leases.mu.Unlock()
}

func (m *leases) report(ctx context.Context, e core.Event) {
	m.mu.Lock()
	obs := m.obs
	m.mu.Unlock()
	for _, o := range obs {
		o(ctx, e)
	}
}

// get returns the lease of key under pi, nil if too many keys are leased
// or the store is closing.
func (m *leases) get(pi *policyInfo, key string) *lease {
	k := leaseKey{pi.fp, key}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	l := m.held[k]
	if l == nil && len(m.held) < maxLeases {
		l = &lease{}
		m.held[k] = l
	}
	return l
}

// take decides r from its key's lease, leasing more when it holds too few.
// ok is false when the lease cannot decide r (a cost above the burst, which
// Redis answers Impossible; too many keys leased; the store closing): r is
// then Redis's to decide.
func (m *leases) take(ctx context.Context, r core.Request, pi *policyInfo) (d core.Decision, ok bool, err error) {
	if r.Cost > r.Policy.Burst() {
		return core.Decision{}, false, nil
	}
	// One deadline for the whole call, however many leases it waits for.
	sp := m.s.dl.current(time.Now())
	for {
		l := m.get(pi, r.Key)
		if l == nil {
			return core.Decision{}, false, nil
		}
		now := m.s.localNow()
		l.mu.Lock()
		switch {
		case l.dead:
			l.mu.Unlock()
			continue
		case r.Cost <= l.units:
			l.units -= r.Cost
			l.used = true
			d = l.standing(r.Policy)
			l.mu.Unlock()
			return d, true, nil
		case now.Before(l.denied) && r.Cost-l.units >= l.deniedFor:
			d = l.deniedAs
			d.Policy = r.Policy
			d.RetryAfter = l.denied.Sub(now)
			d.Remaining = min(d.Remaining+l.units, r.Policy.Burst())
			l.mu.Unlock()
			return d, true, nil
		case l.acquiring != nil:
			ch := l.acquiring
			l.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-sp.done:
				return core.Decision{}, true, context.DeadlineExceeded
			case <-ctx.Done():
				return core.Decision{}, true, ctx.Err()
			}
		}
		ch := make(chan struct{})
		l.acquiring = ch
		need := r.Cost - l.units
		l.mu.Unlock()

		granted, got, err := m.acquire(ctx, r, pi, l, need)
		l.mu.Lock()
		l.acquiring = nil
		close(ch)
		switch {
		case err != nil:
			l.mu.Unlock()
			m.report(ctx, core.Event{Kind: core.LeaseFailed, Key: r.Key, Decision: core.Decision{Policy: r.Policy}, Err: err, Units: pi.lease.size})
			// Spend only what is held: no failure mode.
			return core.Decision{Policy: r.Policy, Degraded: true, RetryAfter: time.Second}, true, nil
		case !got.Allowed:
			if !got.Impossible {
				l.denied, l.deniedFor, l.deniedAs = now.Add(got.RetryAfter), need, got
			}
			got.Policy = r.Policy
			got.Remaining = min(got.Remaining+l.units, r.Policy.Burst())
			l.mu.Unlock()
			return got, true, nil
		}
		l.hold(granted, got, now, pi)
		// The request that asked for the lease is served from it first: a
		// request that came meanwhile cannot spend it from under it.
		l.units -= r.Cost
		l.used = true
		d = l.standing(r.Policy)
		l.mu.Unlock()
		m.report(ctx, core.Event{Kind: core.LeaseTaken, Key: r.Key, Decision: got, Units: granted})
		return d, true, nil
	}
}

// hold adds units leased at now to l, which is locked.
func (l *lease) hold(units int64, d core.Decision, now time.Time, pi *policyInfo) {
	l.units += units
	l.last = d
	if l.expires.IsZero() {
		l.expires = now.Add(pi.lease.interval)
	}
}

// standing is the decision of a request l allowed: Redis's figures as of
// the last lease, with the units l holds.
func (l *lease) standing(p *core.Policy) core.Decision {
	return core.Decision{
		Policy:     p,
		Allowed:    true,
		Limit:      p.Burst(),
		Remaining:  min(l.last.Remaining+l.units, p.Burst()),
		ResetAfter: l.last.ResetAfter,
	}
}

// giveBack returns units a layered request took from its lease but did not
// spend.
func (m *leases) giveBack(pi *policyInfo, key string, units int64) {
	if l := m.get(pi, key); l != nil {
		l.mu.Lock()
		l.units += units
		l.mu.Unlock()
	}
}

// refunded clears what l remembers of a denial: a local refund (Adjust) may
// have made room.
func (m *leases) refunded(pi *policyInfo, key string) {
	if l := m.get(pi, key); l != nil {
		l.mu.Lock()
		l.denied = time.Time{}
		l.mu.Unlock()
	}
}

// acquire asks Redis for a lease of r's key for l: up to the lease size, at
// least need units. If the caller stops waiting and Redis grants the lease
// all the same, its units go to l, to be spent or given back like any.
func (m *leases) acquire(ctx context.Context, r core.Request, pi *policyInfo, l *lease, need int64) (int64, core.Decision, error) {
	o := m.s.pipe.get(opLease, m.s.nowArg())
	o.size = max(pi.lease.size, need)
	o.layers = append(o.layers, layer{key: pi.key(r.Key), info: pi, cost: need})
	o.late = func(o *op) {
		if o.err != nil || len(o.out) != 4 || o.out[0] != 1 {
			return
		}
		l.mu.Lock()
		l.hold(o.out[3], decision(r.Policy, o.out), m.s.localNow(), pi)
		l.mu.Unlock()
		m.report(context.Background(), core.Event{Kind: core.LeaseTaken, Key: r.Key, Decision: decision(r.Policy, o.out), Units: o.out[3]})
	}
	if err := m.s.do(ctx, o); err != nil {
		return 0, core.Decision{}, err
	}
	d := decision(r.Policy, o.out)
	granted := int64(0)
	if d.Allowed {
		granted, d.RetryAfter = o.out[3], 0
	}
	m.s.pipe.put(o)
	return granted, d, nil
}

// forget drops the local lease of key under pi (a Reset): what it holds
// was taken from the state the Reset forgot.
func (m *leases) forget(pi *policyInfo, key string) {
	k := leaseKey{pi.fp, key}
	m.mu.Lock()
	if l := m.held[k]; l != nil {
		l.mu.Lock()
		l.dead, l.units = true, 0
		l.mu.Unlock()
		delete(m.held, k)
	}
	m.mu.Unlock()
}

// run gives back, every tick, the units held past their interval, and
// forgets the keys that were not used since the tick before.
func (m *leases) run() {
	defer close(m.done)
	t := time.NewTicker(m.tick)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.expire()
		}
	}
}

// expire gives back what is held past its interval, a few keys at a time.
func (m *leases) expire() {
	type due struct {
		k     leaseKey
		l     *lease
		units int64
	}
	var dues []due
	now := m.s.localNow()
	m.mu.Lock()
	for k, l := range m.held {
		l.mu.Lock()
		switch {
		case l.acquiring != nil:
		case l.units > 0 && !now.Before(l.expires):
			dues = append(dues, due{k, l, l.units})
			l.units, l.expires = 0, time.Time{}
		case l.units == 0 && !l.used && !now.Before(l.denied):
			l.dead = true // idle
			delete(m.held, k)
		}
		l.used = false
		l.mu.Unlock()
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	limit := make(chan struct{}, 64)
	for _, d := range dues {
		limit <- struct{}{}
		wg.Go(func() {
			defer func() { <-limit }()
			m.giveBackToRedis(d.k, d.l, d.units)
		})
	}
	wg.Wait()
}

// giveBackToRedis refunds units l held. It waits for Redis's answer however
// long the connection takes, not a caller's deadline: only an answer, or an
// error that says the refund never reached Redis, tells whether it was
// applied. Units that never reached Redis are held again, spendable, and go
// back at the next interval; units whose refund may or may not have been
// applied are neither (a unit the limit loses, rather than one it counts
// twice).
func (m *leases) giveBackToRedis(k leaseKey, l *lease, units int64) {
	ctx := context.Background()
	pi := m.s.configured[k.fp]
	o := m.s.pipe.get(opAdjust, m.s.nowArg())
	o.layers = append(o.layers, layer{key: pi.key(k.key), info: pi, cost: -units})
	err := m.s.pipe.do(o, time.Now(), nil, ctx)
	if err == nil {
		err = o.err
		m.s.pipe.put(o)
	}
	switch {
	case err == nil:
		m.report(ctx, core.Event{Kind: core.LeaseReturned, Key: k.key, Decision: core.Decision{Policy: pi.p}, Units: units})
	case neverSent(err):
		l.mu.Lock()
		if !l.dead {
			l.units += units
			if l.expires.IsZero() {
				l.expires = m.s.localNow().Add(pi.lease.interval)
			}
		}
		l.mu.Unlock()
		m.report(ctx, core.Event{Kind: core.LeaseFailed, Key: k.key, Decision: core.Decision{Policy: pi.p}, Err: err, Units: units})
	default:
		m.report(ctx, core.Event{Kind: core.LeaseFailed, Key: k.key, Decision: core.Decision{Policy: pi.p}, Err: fmt.Errorf("giving %d units back may or may not have reached Redis; they are not spent again: %w", units, err), Units: units})
	}
}

// close stops the ticks and gives back what is held, as far as Redis
// answers within the store's timeout; what it cannot give back stays taken
// in Redis until the keys' TTL.
func (m *leases) close() {
	close(m.stop)
	<-m.done
	m.mu.Lock()
	for _, l := range m.held {
		l.mu.Lock()
		l.expires = time.Time{}
		l.mu.Unlock()
	}
	m.mu.Unlock()
	m.expire()
	m.mu.Lock()
	m.closed = true // what is decided from now on, Redis decides
	m.mu.Unlock()
}

// takeAllLeased is TakeAll when some layers are leased: they are decided
// first, from their leases, and the others by Redis together; if any
// layer denies, the leased layers give their units back to their leases
// and report their standing.
func (s *Store) takeAllLeased(ctx context.Context, rs []core.Request, ds []core.Decision) error {
	type spent struct {
		i  int
		pi *policyInfo
	}
	var (
		taken  []spent
		rest   []int
		denied = -1
	)
	giveBack := func() {
		for _, t := range taken {
			r := rs[t.i]
			s.leases.giveBack(t.pi, r.Key, r.Cost)
			ds[t.i].Remaining = min(ds[t.i].Remaining+r.Cost, ds[t.i].Limit)
		}
	}
	for i, r := range rs {
		pi := s.info(r.Policy)
		if pi.lease == nil {
			rest = append(rest, i)
			continue
		}
		d, ok, err := s.leases.take(ctx, r, pi)
		switch {
		case !ok:
			rest = append(rest, i)
			continue
		case err != nil:
			giveBack()
			return &core.StoreError{Op: "take-all", Err: err}
		}
		ds[i] = d
		if !d.Allowed {
			denied = i
			break
		}
		taken = append(taken, spent{i, pi})
	}
	if denied >= 0 {
		giveBack()
		for i, r := range rs {
			if i != denied && (i > denied || s.info(r.Policy).lease == nil) {
				// Not asked: allowed, with its figures unknown.
				ds[i] = core.Decision{Policy: r.Policy, Allowed: true, Limit: r.Policy.Burst()}
			}
		}
		return nil
	}
	if len(rest) == 0 {
		return nil
	}
	sub := make([]core.Request, len(rest))
	subDs := make([]core.Decision, len(rest))
	for j, i := range rest {
		sub[j] = rs[i]
	}
	if err := s.takeAll(ctx, sub, subDs); err != nil {
		giveBack()
		return err
	}
	allowed := true
	for j, i := range rest {
		ds[i] = subDs[j]
		allowed = allowed && subDs[j].Allowed
	}
	if !allowed {
		giveBack()
	}
	return nil
}
