package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
)

// ReservationDifferential is Differential for two core.Reservers: the same
// random reservations (one to three layers), settles as they stream, final
// settles, repeated and late settles, plain takes and times to live passing,
// with every decision, held flag and error alike. A background sweep of
// either store must be off (it may reclaim earlier than the next call).
func ReservationDifferential(t *testing.T, reference, candidate Factory, steps int, seed uint64) {
	var ps []*core.Policy
	for _, alg := range []core.Algorithm{core.TokenBucket, core.GCRA, core.LeakyBucket, core.FixedWindow, core.SlidingCounter} {
		ps = append(ps, differentialPolicies(alg)[:3]...)
	}
	rng := rand.New(rand.NewPCG(seed, 0x7e5e))
	clock := sluicetest.NewManualClock(Epoch.Add(time.Duration(rng.Int64N(int64(24 * time.Hour))).Truncate(time.Microsecond)))
	d := &diffRun{
		t: t, rng: rng, clock: clock, seed: seed, policies: ps,
		ref: reference(t, clock), cand: candidate(t, clock), ns: uniqueKey() + ":",
	}
	d.keys = []string{d.ns + "a", d.ns + "b", d.ns + "c"}
	ref, ok1 := d.ref.(core.Reserver)
	cand, ok2 := d.cand.(core.Reserver)
	if !ok1 || !ok2 {
		t.Fatal("ReservationDifferential needs two core.Reservers")
	}
	type live struct {
		id   string
		rs   []core.Request
		used int64
		ttl  time.Duration
	}
	var lives []*live
	for step := range steps {
		adv := d.advanceReserve()
		r := rng.IntN(100)
		switch {
		case r < 30 || len(lives) == 0:
			l := &live{id: fmt.Sprint("r", step), ttl: time.Duration(1+rng.Int64N(20)) * time.Second}
			n := 1 + rng.IntN(3)
			var desc strings.Builder
			perm := rng.Perm(len(d.keys))
			for j := range n {
				// Distinct keys: on a Cluster, a denied reservation's
				// layers in other slots are decided as those slots see
				// them, which differs from TakeAll's only where a key
				// repeats (see redisstore's Reserve).
				p, _ := d.pick()
				k := d.keys[perm[j]]
				l.rs = append(l.rs, core.Request{Key: k, Policy: p, Cost: d.cost(p)})
				fmt.Fprintf(&desc, " %s/%s:%d", p.Name(), k[len(d.ns):], l.rs[len(l.rs)-1].Cost)
			}
			if rng.IntN(20) == 0 && len(lives) > 0 {
				l.id = lives[rng.IntN(len(lives))].id // an id held already, or reclaimed
			}
			d.note(fmt.Sprintf("%d: +%v reserve %s ttl %v%s", step, adv, l.id, l.ttl, desc.String()))
			dw, dg := make([]core.Decision, n), make([]core.Decision, n)
			errW := ref.Reserve(context.Background(), l.id, l.rs, dw, l.ttl)
			errG := cand.Reserve(context.Background(), l.id, l.rs, dg, l.ttl)
			d.compare(step, "Reserve", dw, dg, errW, errG)
			if errW == nil && dw[0].Allowed && allAllowed(dw) {
				lives = append(lives, l)
			}
		case r < 85:
			i := rng.IntN(len(lives))
			l := lives[i]
			final := rng.IntN(4) == 0
			switch u := rng.IntN(10); {
			case u < 6:
				l.used += rng.Int64N(6)
			case u < 8: // a stale or repeated total
			default:
				l.used += rng.Int64N(40)
			}
			qs := make([]core.Request, len(l.rs))
			for j, q := range l.rs {
				q.Cost = l.used
				qs[j] = q
			}
			d.note(fmt.Sprintf("%d: +%v settle %s used %d final %v", step, adv, l.id, l.used, final))
			dw, dg := make([]core.Decision, len(qs)), make([]core.Decision, len(qs))
			hw, errW := ref.Settle(context.Background(), l.id, qs, dw, final, l.ttl)
			hg, errG := cand.Settle(context.Background(), l.id, qs, dg, final, l.ttl)
			if hw != hg {
				d.fail(step, "Settle held", hw, hg, errW, errG)
			}
			d.compare(step, "Settle", dw, dg, errW, errG)
			if final && rng.IntN(3) > 0 {
				lives = append(lives[:i], lives[i+1:]...) // or settled again, late
			}
		default:
			d.take(step, adv)
		}
	}
}

// advanceReserve moves the clock less than advance does, so that times to
// live pass now and then rather than at every step.
func (d *diffRun) advanceReserve() time.Duration {
	var adv time.Duration
	switch r := d.rng.IntN(10); {
	case r < 4:
	case r < 8:
		adv = time.Duration(d.rng.Int64N(int64(time.Second)/1000)) * time.Microsecond
	default:
		adv = time.Duration(d.rng.Int64N(int64(10*time.Second)/1000)) * time.Microsecond
	}
	if adv > 0 {
		d.clock.Advance(adv)
	}
	return adv
}

func (d *diffRun) compare(step int, what string, dw, dg []core.Decision, errW, errG error) {
	d.t.Helper()
	if (errW == nil) != (errG == nil) {
		d.fail(step, what, dw, dg, errW, errG)
	}
	if errW != nil {
		return
	}
	for i := range dw {
		if dw[i] != dg[i] {
			d.fail(step, fmt.Sprintf("%s layer %d", what, i), dw, dg, errW, errG)
		}
	}
}

func allAllowed(ds []core.Decision) bool {
	for _, d := range ds {
		if !d.Allowed {
			return false
		}
	}
	return true
}
