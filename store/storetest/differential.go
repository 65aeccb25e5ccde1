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

// Differential drives two stores sharing one manual clock through the same
// random sequence of steps and requires identical results: every decision
// field for field, every error alike. Each step advances the clock by a
// random amount (often zero, often less than one interval, sometimes to a
// window boundary or far beyond) and then takes a random cost (from 1 to
// more than the burst), gives units back (a negative Adjust), charges
// units, gives a turn back (core.TurnReturner, where both stores have it),
// takes a layered request over two or three keys and policies, or resets a
// key.
//
// It runs one subtest per algorithm, each with steps steps over several
// policies whose rates do not divide evenly (3 per second, 7 per 10s, one
// per 7µs...) and three keys, half of the steps working on the key and
// policy of the step before; and a "mixed" subtest, with steps/5 steps,
// whose layered requests mix algorithms. Decisions compare in every field,
// the leaky queue's Delay included.
// seed makes a run repeatable; a failure reports it with the steps that led
// there.
func Differential(t *testing.T, reference, candidate Factory, steps int, seed uint64) {
	for i, alg := range allAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			runDifferential(t, reference, candidate, differentialPolicies(alg), steps, seed+uint64(i))
		})
	}
	t.Run("mixed", func(t *testing.T) {
		var ps []*core.Policy
		for _, alg := range allAlgorithms {
			ps = append(ps, differentialPolicies(alg)[:2]...)
		}
		runDifferential(t, reference, candidate, ps, max(steps/5, 1), seed+uint64(len(allAlgorithms)))
	})
}

// differentialPolicies returns the policies one algorithm is exercised
// with: rates that do not divide evenly, tiny and long periods.
func differentialPolicies(alg core.Algorithm) []*core.Policy {
	name := func(i int) string { return fmt.Sprintf("diff-%v-%d", alg, i) }
	if alg == core.LeakyQueue {
		// Bounds that are whole numbers of intervals and bounds that are
		// not, some shorter than an interval.
		shapes := []struct {
			burst, quota int64
			period       time.Duration
			maxDelay     time.Duration
			maxQueue     int64
		}{
			{1, 2, time.Second, 5 * time.Second, 0},
			{5, 2, time.Second, 0, 6},
			{3, 7, 10 * time.Second, 2 * time.Second, 0},
			{1, 1, 7 * time.Microsecond, 20 * time.Microsecond, 0},
			{2, 1000, time.Second, 3*time.Millisecond + time.Microsecond, 0},
			{10, 3, 7 * time.Microsecond, time.Hour, 5},
			{1, 3, time.Second, 100 * time.Millisecond, 0},
		}
		ps := make([]*core.Policy, len(shapes))
		for i, s := range shapes {
			ps[i] = core.MustPolicy(core.PolicyConfig{Name: name(i), Algorithm: alg, Quota: s.quota, Period: s.period,
				Burst: s.burst, MaxDelay: s.maxDelay, MaxQueue: s.maxQueue})
		}
		return ps
	}
	if alg == core.TokenBucket || alg == core.GCRA || alg == core.LeakyBucket {
		shapes := []struct {
			burst, quota int64
			period       time.Duration
		}{
			{10, 3, time.Second},
			{1, 7, 10 * time.Second},
			{5, 1, 7 * time.Microsecond},
			{50, 1000, time.Second},
			{3, 2, time.Minute},
			{20, 3, 7 * time.Microsecond},
		}
		ps := make([]*core.Policy, len(shapes))
		for i, s := range shapes {
			ps[i] = core.MustPolicy(core.PolicyConfig{Name: name(i), Algorithm: alg, Quota: s.quota, Period: s.period, Burst: s.burst})
		}
		return ps
	}
	shapes := []struct {
		quota  int64
		period time.Duration
	}{
		{3, time.Second},
		{7, 10 * time.Second},
		{10, time.Millisecond},
		{1, 7 * time.Microsecond},
		{100, time.Minute},
		// Dense windows (Quota at least Period in µs), where the sliding
		// counter's float weighting rounds either way and its search can
		// find no fit inside a window.
		{100, 100 * time.Microsecond},
		{5, 3 * time.Microsecond},
	}
	ps := make([]*core.Policy, len(shapes))
	for i, s := range shapes {
		ps[i] = core.MustPolicy(core.PolicyConfig{Name: name(i), Algorithm: alg, Quota: s.quota, Period: s.period})
	}
	return ps
}

func runDifferential(t *testing.T, reference, candidate Factory, policies []*core.Policy, steps int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	start := Epoch.Add(time.Duration(rng.Int64N(int64(24 * time.Hour))).Truncate(time.Microsecond))
	clock := sluicetest.NewManualClock(start)
	ns := uniqueKey() + ":"
	r := &diffRun{t: t, rng: rng, seed: seed, clock: clock, ctx: context.Background(), ref: reference(t, clock), cand: candidate(t, clock),
		policies: policies, ns: ns, keys: []string{ns + "a", ns + "b", ns + "c"},
		ds: [2][]core.Decision{make([]core.Decision, 3), make([]core.Decision, 3)}}
	r.turns[0], _ = r.ref.(core.TurnReturner) // where both stores give turns back
	r.turns[1], _ = r.cand.(core.TurnReturner)
	for step := range steps {
		r.step = step
		r.adv = r.advance()
		switch x := rng.IntN(100); {
		case x < 58:
			r.take()
		case x < 71 && x >= 64 && r.turns[0] != nil && r.turns[1] != nil:
			r.returnTurn()
		case x < 75:
			r.adjust(x >= 71)
		case x < 98:
			r.takeAll()
		default:
			r.reset()
		}
	}
}

// diffRun is one run of Differential: two stores on one clock, the random
// steps, and the last of them, to report.
type diffRun struct {
	t         *testing.T
	rng       *rand.Rand
	seed      uint64
	clock     *sluicetest.ManualClock
	ref, cand core.Store
	turns     [2]core.TurnReturner
	policies  []*core.Policy
	ns        string
	keys      []string
	ds        [2][]core.Decision
	history   []string
	lastP     *core.Policy
	lastK     string
	step      int
	adv       time.Duration
	ctx       context.Context
}

func (r *diffRun) note(s string) {
	if len(r.history) == 24 {
		copy(r.history, r.history[1:])
		r.history = r.history[:23]
	}
	r.history = append(r.history, s)
}

func (r *diffRun) fail(what string, want, got any, errWant, errGot error) {
	r.t.Helper()
	r.t.Fatalf("step %d (seed %d): %s\nreference: %+v (err %v)\ncandidate: %+v (err %v)\nlast steps:\n  %s",
		r.step, r.seed, what, want, errWant, got, errGot, strings.Join(r.history, "\n  "))
}

// pick returns a policy and key, half the time the last ones again, so that
// runs of steps work on one state.
func (r *diffRun) pick() (*core.Policy, string) {
	if r.lastP == nil || r.rng.IntN(2) == 0 {
		r.lastP, r.lastK = r.policies[r.rng.IntN(len(r.policies))], r.keys[r.rng.IntN(len(r.keys))]
	}
	return r.lastP, r.lastK
}

func (r *diffRun) cost(p *core.Policy) int64 {
	switch x := r.rng.IntN(10); {
	case x < 5:
		return 1
	case x < 8:
		return 1 + r.rng.Int64N(p.Burst())
	case x < 9:
		return p.Burst()
	default:
		// Past the burst: impossible, or for a queue a request that waits
		// or overflows it.
		return p.Burst() + 1 + r.rng.Int64N(3+2*p.MaxDelay().Microseconds()/max(p.Interval().Microseconds(), 1))
	}
}

// advance moves the clock, by amounts measured on the last policy used.
func (r *diffRun) advance() time.Duration {
	period := r.policies[r.rng.IntN(len(r.policies))].Period()
	if r.lastP != nil && r.rng.IntN(2) == 0 {
		period = r.lastP.Period()
	}
	var adv time.Duration
	switch x := r.rng.IntN(20); {
	case x < 6: // stand still
	case x < 10:
		adv = time.Duration(1+r.rng.Int64N(999)) * time.Microsecond
	case x < 14:
		adv = time.Duration(r.rng.Int64N(int64(period)/1000+1)) * time.Microsecond
	case x < 17:
		adv = time.Duration(r.rng.Int64N(2*int64(period)/1000+1)) * time.Microsecond
	case x < 19: // to a window boundary, or one µs either side
		now := r.clock.Now().UnixMicro()
		per := period.Microseconds()
		adv = time.Duration(per-now%per+r.rng.Int64N(3)-1) * time.Microsecond
	default:
		adv = time.Duration(3+r.rng.Int64N(18)) * period
	}
	if adv > 0 {
		r.clock.Advance(adv)
	}
	return adv
}

func (r *diffRun) short(k string) string { return k[len(r.ns):] }

func (r *diffRun) take() {
	p, k := r.pick()
	c := r.cost(p)
	r.note(fmt.Sprintf("%d: +%v take %s/%s cost %d", r.step, r.adv, p.Name(), r.short(k), c))
	req := core.Request{Key: k, Policy: p, Cost: c}
	want, errW := r.ref.Take(r.ctx, req)
	got, errG := r.cand.Take(r.ctx, req)
	if want != got || (errW == nil) != (errG == nil) {
		r.fail("Take", want, got, errW, errG)
	}
}

func (r *diffRun) returnTurn() {
	p, k := r.pick()
	c := 1 + r.rng.Int64N(3)
	in := time.Duration(r.rng.Int64N(int64(p.MaxDelay()+2*p.Interval())+1)) - p.Interval()
	if p.Interval() == 0 {
		in = time.Duration(r.rng.Int64N(int64(time.Second)))
	}
	in = in.Truncate(time.Microsecond)
	r.note(fmt.Sprintf("%d: +%v return-turn %s/%s %d in %v", r.step, r.adv, p.Name(), r.short(k), c, in))
	req := core.Request{Key: k, Policy: p, Cost: c}
	want, errW := r.turns[0].ReturnTurn(r.ctx, req, in)
	got, errG := r.turns[1].ReturnTurn(r.ctx, req, in)
	if want != got || (errW == nil) != (errG == nil) {
		r.fail("ReturnTurn", want, got, errW, errG)
	}
}

func (r *diffRun) adjust(charge bool) {
	p, k := r.pick()
	delta := -1 - r.rng.Int64N(p.Burst()+2)
	if charge {
		delta = 1 + r.rng.Int64N(p.Burst())
	}
	r.note(fmt.Sprintf("%d: +%v adjust %s/%s %+d", r.step, r.adv, p.Name(), r.short(k), delta))
	req := core.Request{Key: k, Policy: p, Cost: delta}
	want, errW := r.ref.Adjust(r.ctx, req)
	got, errG := r.cand.Adjust(r.ctx, req)
	if want != got || (errW == nil) != (errG == nil) {
		r.fail("Adjust", want, got, errW, errG)
	}
}

func (r *diffRun) takeAll() {
	n := 2 + r.rng.IntN(2)
	rs := make([]core.Request, n)
	var desc strings.Builder
	for i := range rs {
		p, k := r.pick()
		rs[i] = core.Request{Key: k, Policy: p, Cost: r.cost(p)}
		if r.rng.IntN(3) == 0 {
			rs[i].Cost = 1
		}
		fmt.Fprintf(&desc, " %s/%s:%d", p.Name(), r.short(k), rs[i].Cost)
	}
	r.note(fmt.Sprintf("%d: +%v take-all%s", r.step, r.adv, desc.String()))
	errW := r.ref.TakeAll(r.ctx, rs, r.ds[0])
	errG := r.cand.TakeAll(r.ctx, rs, r.ds[1])
	if (errW == nil) != (errG == nil) {
		r.fail("TakeAll", r.ds[0][:n], r.ds[1][:n], errW, errG)
	}
	for i := range n {
		if r.ds[0][i] != r.ds[1][i] {
			r.fail(fmt.Sprintf("TakeAll layer %d", i), r.ds[0][:n], r.ds[1][:n], errW, errG)
		}
	}
}

func (r *diffRun) reset() {
	p, k := r.pick()
	r.note(fmt.Sprintf("%d: +%v reset %s/%s", r.step, r.adv, p.Name(), r.short(k)))
	errW := r.ref.Reset(r.ctx, k, p)
	errG := r.cand.Reset(r.ctx, k, p)
	if (errW == nil) != (errG == nil) {
		r.fail("Reset", nil, nil, errW, errG)
	}
}
