package backpressure

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Permit is a slot held by an admitted request. Done or Release frees it;
// both may be called any number of times, from any goroutine, and only the
// first call counts. The zero Permit holds nothing.
type Permit struct {
	s   *slot
	gen uint64
	r   Releaser // a slot held elsewhere (PermitFor), if not nil
}

// Releaser is a slot held somewhere else than in a Limiter, such as a
// shared store's lease (redisslots), that a Permit gives back: its Done
// must free the slot on the first call and do nothing on later ones.
type Releaser interface {
	Done(o core.Outcome)
}

// PermitFor returns a Permit that gives r back, so that a slot held
// elsewhere travels where a Limiter's Permit does.
func PermitFor(r Releaser) Permit { return Permit{r: r} }

// Done frees the slot and reports how the request went; the Limiter
// measures its latency from admission to this call.
func (p Permit) Done(o core.Outcome) {
	if p.r != nil {
		p.r.Done(o)
		return
	}
	s := p.s
	if s == nil || s.gen.Load() != p.gen {
		return
	}
	l := s.l
	now := l.clock.Now()
	l.mu.Lock()
	if s.gen.Load() != p.gen {
		l.mu.Unlock()
		return
	}
	ctx, old := s.ctx, l.limit
	l.finish(s, o, now)
	e := core.Event{Kind: core.LimitChanged, LimitName: l.name, Limit: int64(l.limit)}
	if x, ok := l.ctl.(explainer); ok && l.limit != old {
		if c := x.Cause(); c != 0 {
			e.Cause = c.String()
		}
		e.Baseline = x.Baseline()
	}
	l.mu.Unlock()
	if l.observe != nil {
		l.observe(ctx, core.Event{Kind: core.Released, LimitName: l.name})
		if int(e.Limit) != old {
			l.observe(ctx, e)
		}
	}
}

// Release frees the slot without reporting an outcome (as Done(core.Ignored)).
// Deferred right after Acquire, it frees the slot on every path, panics
// included; a Done before it makes it a no-op.
func (p Permit) Release() { p.Done(core.Ignored) }

// admit takes a slot for a request of the given rank.
func (l *Limiter) admit(ctx context.Context, k *keyEntry, rank int, now time.Time) *slot {
	l.inFlight++
	l.keyAdmitted(k)
	var s *slot
	if n := len(l.freeSlots); n > 0 {
		s = l.freeSlots[n-1]
		l.freeSlots = l.freeSlots[:n-1]
	} else {
		s = &slot{l: l}
	}
	s.ctx, s.key, s.start, s.inFlight, s.room = ctx, k, now, l.inFlight, l.room[rank]
	return s
}

// finish frees s, feeds its outcome to the controller, and admits waiters
// into the room it leaves.
func (l *Limiter) finish(s *slot, o core.Outcome, now time.Time) {
	s.gen.Add(1)
	l.inFlight--
	k := s.key
	l.keyFreed(k)
	if o == core.Succeeded || o == core.Failed { // any other value teaches nothing, as core.Ignored
		latency := max(now.Sub(s.start), 0)
		if l.latency == 0 {
			l.latency = float64(latency)
		} else {
			l.latency += (float64(latency) - l.latency) / 16
		}
		if l.ctl != nil {
			dropped := o == core.Failed || (l.maxLatency > 0 && latency > l.maxLatency)
			l.setLimit(l.ctl.Update(Sample{At: now, Latency: latency, InFlight: s.inFlight, Room: s.room, Dropped: dropped}))
		}
	}
	l.dispatch(now)
	if k != nil {
		l.dropIfIdle(k)
	}
	s.ctx, s.key = nil, nil
	if len(l.freeSlots) < maxFree {
		l.freeSlots = append(l.freeSlots, s)
	}
}

// maxFree bounds each free list: beyond it, freed objects go to the garbage
// collector.
const maxFree = 1 << 12

// slot is the state of one admitted request. Slots are reused; gen tells a
// Permit whether its slot is still the one it was given.
type slot struct {
	gen      atomic.Uint64
	l        *Limiter
	ctx      context.Context // the request's, for the events its completion causes
	key      *keyEntry
	start    time.Time
	inFlight int
	room     int // the room its class had when it was admitted
}
