package redisstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
)

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
	err := m.s.pipeOf(ctx, o).do(o, time.Now(), nil, time.Time{}, ctx)
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
