package storetest

import (
	"context"
	"fmt"
	"github.com/sluice-go/sluice/sluicetest"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Differential drives two stores sharing one manual clock through the same
// random sequence of steps (takes, refunds, charges, turns given back,
// layered takes and resets, at random times) and requires identical
// results: every decision field for field, every error alike. It runs one
// subtest of steps steps per algorithm and a "mixed" one of steps/5; seed
// makes a run repeatable, and a failure reports it with the steps that led
// there.
func Differential(t *testing.T, reference, candidate Factory, steps int, seed uint64) {
	// Each step advances the clock by a random amount (often zero, often
	// less than one interval, sometimes to a window boundary or far beyond),
	// then takes a random cost (from 1 to more than the burst), gives units
	// back, charges units, gives a turn back, takes a layered request over
	// two or three keys and policies, or resets a key. The policies' rates
	// do not divide evenly (3 per second, 7 per 10s, one per 7µs...); there
	// are three keys, and half of the steps work on the key and policy of
	// the step before. The mixed subtest's layered requests mix algorithms.
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
	d := &diffRun{
		t: t, rng: rng, clock: clock, seed: seed, policies: policies,
		ref: reference(t, clock), cand: candidate(t, clock),
		ns: uniqueKey() + ":",
		ds: [2][]core.Decision{make([]core.Decision, 3), make([]core.Decision, 3)},
	}
	d.keys = []string{d.ns + "a", d.ns + "b", d.ns + "c"}
	for step := range steps {
		adv := d.advance()
		switch r := rng.IntN(100); {
		case r < 58:
			d.take(step, adv)
		case r < 71 && r >= 64:
			d.returnTurn(step, adv)
		case r < 75:
			d.adjust(step, adv, r >= 71)
		case r < 98:
			d.takeAll(step, adv)
		default:
			d.reset(step, adv)
		}
	}
}

// diffRun is one differential run: two stores on one clock, fed the same
// random steps.
type diffRun struct {
	t         *testing.T
	rng       *rand.Rand
	clock     *sluicetest.ManualClock
	seed      uint64
	policies  []*core.Policy
	ref, cand core.Store
	ns        string
	keys      []string
	ds        [2][]core.Decision
	history   []string // the last steps, for a failure's message
	lastP     *core.Policy
	lastK     string
}

func (d *diffRun) note(s string) {
	if len(d.history) == 24 {
		copy(d.history, d.history[1:])
		d.history = d.history[:23]
	}
	d.history = append(d.history, s)
}

func (d *diffRun) fail(step int, what string, want, got any, errWant, errGot error) {
	d.t.Helper()
	d.t.Fatalf("step %d (seed %d): %s\nreference: %+v (err %v)\ncandidate: %+v (err %v)\nlast steps:\n  %s",
		step, d.seed, what, want, errWant, got, errGot, strings.Join(d.history, "\n  "))
}

// pick returns a policy and key, half the time the last ones again, so
// that runs of steps work on one state.
func (d *diffRun) pick() (*core.Policy, string) {
	if d.lastP == nil || d.rng.IntN(2) == 0 {
		d.lastP, d.lastK = d.policies[d.rng.IntN(len(d.policies))], d.keys[d.rng.IntN(len(d.keys))]
	}
	return d.lastP, d.lastK
}

func (d *diffRun) cost(p *core.Policy) int64 {
	switch r := d.rng.IntN(10); {
	case r < 5:
		return 1
	case r < 8:
		return 1 + d.rng.Int64N(p.Burst())
	case r < 9:
		return p.Burst()
	default:
		// Past the burst: impossible, or for a queue a request that
		// waits or overflows it.
		return p.Burst() + 1 + d.rng.Int64N(3+2*p.MaxDelay().Microseconds()/max(p.Interval().Microseconds(), 1))
	}
}

// advance moves the clock, by amounts measured on the last policy used.
func (d *diffRun) advance() time.Duration {
	period := d.policies[d.rng.IntN(len(d.policies))].Period()
	if d.lastP != nil && d.rng.IntN(2) == 0 {
		period = d.lastP.Period()
	}
	var adv time.Duration
	switch r := d.rng.IntN(20); {
	case r < 6: // stand still
	case r < 10:
		adv = time.Duration(1+d.rng.Int64N(999)) * time.Microsecond
	case r < 14:
		adv = time.Duration(d.rng.Int64N(int64(period)/1000+1)) * time.Microsecond
	case r < 17:
		adv = time.Duration(d.rng.Int64N(2*int64(period)/1000+1)) * time.Microsecond
	case r < 19: // to a window boundary, or one µs either side
		now := d.clock.Now().UnixMicro()
		per := period.Microseconds()
		adv = time.Duration(per-now%per+d.rng.Int64N(3)-1) * time.Microsecond
	default:
		adv = time.Duration(3+d.rng.Int64N(18)) * period
	}
	if adv > 0 {
		d.clock.Advance(adv)
	}
	return adv
}

func (d *diffRun) take(step int, adv time.Duration) {
	p, k := d.pick()
	c := d.cost(p)
	d.note(fmt.Sprintf("%d: +%v take %s/%s cost %d", step, adv, p.Name(), k[len(d.ns):], c))
	req := core.Request{Key: k, Policy: p, Cost: c}
	want, errW := d.ref.Take(context.Background(), req)
	got, errG := d.cand.Take(context.Background(), req)
	if want != got || (errW == nil) != (errG == nil) {
		d.fail(step, "Take", want, got, errW, errG)
	}
}

func (d *diffRun) returnTurn(step int, adv time.Duration) {
	p, k := d.pick()
	c := 1 + d.rng.Int64N(3)
	in := time.Duration(d.rng.Int64N(int64(p.MaxDelay()+2*p.Interval())+1)) - p.Interval()
	if p.Interval() == 0 {
		in = time.Duration(d.rng.Int64N(int64(time.Second)))
	}
	in = in.Truncate(time.Microsecond)
	d.note(fmt.Sprintf("%d: +%v return-turn %s/%s %d in %v", step, adv, p.Name(), k[len(d.ns):], c, in))
	req := core.Request{Key: k, Policy: p, Cost: c}
	want, errW := d.ref.ReturnTurn(context.Background(), req, in)
	got, errG := d.cand.ReturnTurn(context.Background(), req, in)
	if want != got || (errW == nil) != (errG == nil) {
		d.fail(step, "ReturnTurn", want, got, errW, errG)
	}
}

func (d *diffRun) adjust(step int, adv time.Duration, charge bool) {
	p, k := d.pick()
	delta := -1 - d.rng.Int64N(p.Burst()+2)
	if charge {
		delta = 1 + d.rng.Int64N(p.Burst())
	}
	d.note(fmt.Sprintf("%d: +%v adjust %s/%s %+d", step, adv, p.Name(), k[len(d.ns):], delta))
	req := core.Request{Key: k, Policy: p, Cost: delta}
	want, errW := d.ref.Adjust(context.Background(), req)
	got, errG := d.cand.Adjust(context.Background(), req)
	if want != got || (errW == nil) != (errG == nil) {
		d.fail(step, "Adjust", want, got, errW, errG)
	}
}

func (d *diffRun) takeAll(step int, adv time.Duration) {
	n := 2 + d.rng.IntN(2)
	rs := make([]core.Request, n)
	var desc strings.Builder
	for i := range rs {
		p, k := d.pick()
		rs[i] = core.Request{Key: k, Policy: p, Cost: d.cost(p)}
		if d.rng.IntN(3) == 0 {
			rs[i].Cost = 1
		}
		fmt.Fprintf(&desc, " %s/%s:%d", p.Name(), k[len(d.ns):], rs[i].Cost)
	}
	d.note(fmt.Sprintf("%d: +%v take-all%s", step, adv, desc.String()))
	errW := d.ref.TakeAll(context.Background(), rs, d.ds[0])
	errG := d.cand.TakeAll(context.Background(), rs, d.ds[1])
	if (errW == nil) != (errG == nil) {
		d.fail(step, "TakeAll", d.ds[0][:n], d.ds[1][:n], errW, errG)
	}
	for i := range n {
		if d.ds[0][i] != d.ds[1][i] {
			d.fail(step, fmt.Sprintf("TakeAll layer %d", i), d.ds[0][:n], d.ds[1][:n], errW, errG)
		}
	}
}

func (d *diffRun) reset(step int, adv time.Duration) {
	p, k := d.pick()
	d.note(fmt.Sprintf("%d: +%v reset %s/%s", step, adv, p.Name(), k[len(d.ns):]))
	errW := d.ref.Reset(context.Background(), k, p)
	errG := d.cand.Reset(context.Background(), k, p)
	if (errW == nil) != (errG == nil) {
		d.fail(step, "Reset", nil, nil, errW, errG)
	}
}
