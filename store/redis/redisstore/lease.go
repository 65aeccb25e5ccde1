package redisstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
)

// WithLease serves p's decisions (p matched by fingerprint) from leases:
// this instance takes size units (1 to p's Burst) of a key's budget from
// Redis at once, spends them at memory speed, and gives back what it has not
// spent within interval. Over any span the fleet admits at most what the
// limit allows plus instances × size; while Redis is down an instance spends
// only what it holds, then denies with a Degraded decision whatever the
// limiter's failure mode; while Redis answers, a denial carries its figures,
// never Degraded. A LeakyQueue policy cannot be leased; docs/redis.md states
// every bound and what a leased decision reports.
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
	acquiring *fetch        // the lease being asked for, if any
	used      bool          // spent from since the last tick
	dead      bool          // out of the map: get another
}

// fetch is one request for a lease, which the requests that come meanwhile
// wait for: done closes when Redis has answered or the request has given
// up, failed is then true if Redis did not answer, so that the waiters get
// the same answer as the request they waited for, the lease's, without a
// round trip each to a Redis that does not answer.
type fetch struct {
	done   chan struct{}
	failed bool
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
		k.key = strings.Clone(key) // the caller's may share memory (see core.Request)
		m.held[k] = l
	}
	return l
}

// take decides r from its key's lease, leasing more when it holds too few.
// ok is false when the lease cannot decide r (a cost above the burst, which
// Redis answers Impossible; too many keys leased; the store closing): r is
// then Redis's to decide. Whatever happens to Redis, a request the lease
// decides gets the lease's answer, never an error for the limiter's
// failure mode to answer: the request that asks Redis for a lease, and
// every request waiting for it, are denied (unanswered) if Redis does not
// answer that lease within the store's timeout, or the caller gives up.
//
// Only then: a request waiting for another's lease waits for Redis's
// answer to it, which the store's timeout bounds, not for a deadline of
// its own. On a busy machine a caller may wait its whole timeout for a
// lock and a lease fetched by another, or lose the units of several leases
// in a row to the callers that fetched them, while Redis answers each
// lease at once; giving up then would answer a request Redis would deny
// (or admit) with a Degraded decision, a 503 for a 429. So a caller that
// has waited for a lease and finds its own deadline past asks Redis for a
// lease of its own, and has Redis's answer, whatever the others do.
func (m *leases) take(ctx context.Context, r core.Request, pi *policyInfo) (d core.Decision, ok bool) {
	if r.Cost > r.Policy.Burst() {
		return core.Decision{}, false
	}
	// One deadline for the whole call, however many leases it waits for.
	sp := m.s.dl.current(time.Now())
	waited := false
	for {
		l := m.get(pi, r.Key)
		if l == nil {
			return core.Decision{}, false
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
			return d, true
		case now.Before(l.denied) && r.Cost-l.units >= l.deniedFor:
			d = l.deniedAs
			d.Policy = r.Policy
			d.RetryAfter = l.denied.Sub(now)
			d.Remaining = min(d.Remaining+l.units, r.Policy.Burst())
			l.mu.Unlock()
			return d, true
		case l.acquiring != nil && (!waited || !ended(sp.done)):
			f := l.acquiring
			l.mu.Unlock()
			select {
			case <-f.done:
				if f.failed {
					return unanswered(r.Policy), true
				}
				waited = true
				continue
			case <-ctx.Done():
			}
			return unanswered(r.Policy), true
		case l.acquiring != nil:
			return m.fetch(ctx, r, pi, l, now, false), true
		}
		return m.fetch(ctx, r, pi, l, now, true), true
	}
}

// ended reports whether c is closed.
func ended(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// unanswered is the lease's answer to a request it holds too few units for
// when Redis does not grant more: denied, Degraded, without figures (Limit
// zero: the middleware answers 503).
func unanswered(p *core.Policy) core.Decision {
	return core.Decision{Policy: p, Degraded: true, RetryAfter: time.Second}
}

// fetch asks Redis for a lease for r, which l, locked, holds too few units
// for, and decides r from its answer; it unlocks l. A shared fetch is the
// one the requests that come meanwhile wait for; another is a caller's own
// (see take).
func (m *leases) fetch(ctx context.Context, r core.Request, pi *policyInfo, l *lease, now time.Time, shared bool) core.Decision {
	var f *fetch
	if shared {
		f = &fetch{done: make(chan struct{})}
		l.acquiring = f
	}
	need := r.Cost - l.units
	l.mu.Unlock()

	granted, got, err := m.acquire(ctx, r, pi, l, need)
	l.mu.Lock()
	if shared {
		l.acquiring = nil
		// A fetch its caller gave up on says nothing of Redis: the
		// waiters try again.
		f.failed = err != nil && ctx.Err() == nil
		close(f.done)
	}
	switch {
	case err != nil:
		l.mu.Unlock()
		m.report(ctx, core.Event{Kind: core.LeaseFailed, Key: r.Key, Decision: core.Decision{Policy: r.Policy}, Err: err, Units: pi.lease.size})
		// Spend only what is held: no failure mode.
		return unanswered(r.Policy)
	case !got.Allowed:
		if !got.Impossible {
			l.denied, l.deniedFor, l.deniedAs = now.Add(got.RetryAfter), need, got
		}
		got.Policy = r.Policy
		got.Remaining = min(got.Remaining+l.units, r.Policy.Burst())
		l.mu.Unlock()
		return got
	}
	l.hold(granted, got, now, pi)
	// The request that asked for the lease is served from it first: a
	// request that came meanwhile cannot spend it from under it.
	l.units -= r.Cost
	l.used = true
	d := l.standing(r.Policy)
	l.mu.Unlock()
	m.report(ctx, core.Event{Kind: core.LeaseTaken, Key: r.Key, Decision: got, Units: granted})
	return d
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
