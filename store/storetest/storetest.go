// Package storetest is the conformance suite every core.Store must pass: it
// drives a store on a manual clock through exact figures for every
// algorithm, costs, refunds, hostile values, layered limits, key isolation,
// concurrency and the leaky queue's turns. Run it on a store of your own:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t testing.TB, clock core.Clock) core.Store {
//			return mystore.New(mystore.WithClock(clock))
//		})
//	}
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"github.com/sluice-go/sluice/sluicetest"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Factory returns an empty store whose time is clock's. The suite calls it
// once per scenario and never closes what it returns: register cleanup with
// t.Cleanup.
type Factory func(t testing.TB, clock core.Clock) core.Store

// Epoch is where every scenario's clock starts: a whole day, so it is a
// boundary of every window the suite uses.
var Epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Run runs the whole suite against the stores newStore makes.
func Run(t *testing.T, newStore Factory) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			sc.run(t, newHarness(t, newStore))
		})
	}
}

// harness is one scenario's store, clock and key space.
type harness struct {
	t     *testing.T
	store core.Store
	clock *sluicetest.ManualClock
	ns    string
}

func newHarness(t *testing.T, newStore Factory) *harness {
	clock := sluicetest.NewManualClock(Epoch)
	return &harness{t: t, store: newStore(t, clock), clock: clock, ns: uniqueKey() + ":"}
}

// key returns a key private to this scenario, so stores shared between
// scenarios (a Redis server) never see one scenario's state in another.
func (h *harness) key(name string) string { return h.ns + name }

func (h *harness) take(key string, p *core.Policy, cost int64) core.Decision {
	h.t.Helper()
	d, err := h.store.Take(context.Background(), core.Request{Key: h.key(key), Policy: p, Cost: cost})
	if err != nil {
		h.t.Fatalf("Take(%q, %s, %d): %v", key, p.Name(), cost, err)
	}
	return d
}

func (h *harness) adjust(key string, p *core.Policy, delta int64) core.Decision {
	h.t.Helper()
	d, err := h.store.Adjust(context.Background(), core.Request{Key: h.key(key), Policy: p, Cost: delta})
	if err != nil {
		h.t.Fatalf("Adjust(%q, %s, %d): %v", key, p.Name(), delta, err)
	}
	return d
}

// count takes cost n times and returns how many were allowed.
func (h *harness) count(key string, p *core.Policy, n int) int {
	h.t.Helper()
	allowed := 0
	for range n {
		if h.take(key, p, 1).Allowed {
			allowed++
		}
	}
	return allowed
}

func uniqueKey() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Policy builders the scenarios share.

func bucket(alg core.Algorithm, burst, quota int64, period time.Duration) *core.Policy {
	return core.MustPolicy(core.PolicyConfig{Name: alg.String(), Algorithm: alg, Quota: quota, Period: period, Burst: burst})
}

func window(alg core.Algorithm, quota int64, period time.Duration) *core.Policy {
	return core.MustPolicy(core.PolicyConfig{Name: alg.String(), Algorithm: alg, Quota: quota, Period: period})
}

// queue returns a LeakyQueue policy: burst units at once, then one every
// Period/quota, each waiting at most maxDelay.
func queue(burst, quota int64, period, maxDelay time.Duration) *core.Policy {
	return core.MustPolicy(core.PolicyConfig{Name: core.LeakyQueue.String(), Algorithm: core.LeakyQueue,
		Quota: quota, Period: period, Burst: burst, MaxDelay: maxDelay})
}

var (
	bucketAlgorithms = []core.Algorithm{core.TokenBucket, core.GCRA, core.LeakyBucket}
	windowAlgorithms = []core.Algorithm{core.FixedWindow, core.SlidingLog, core.SlidingCounter}
	// immediateAlgorithms grant at once or not at all: their Remaining
	// counts every unit a request could still take. The leaky queue's
	// counts those that pass without waiting.
	immediateAlgorithms = append(append([]core.Algorithm{}, bucketAlgorithms...), windowAlgorithms...)
	allAlgorithms       = append(append([]core.Algorithm{}, immediateAlgorithms...), core.LeakyQueue)
)

// somePolicy returns a policy of alg admitting 10 at once, refilling 10 per
// 10s: for the leaky queue, 4 at once and 6 more waiting up to 6s.
func somePolicy(alg core.Algorithm) *core.Policy {
	switch alg {
	case core.TokenBucket, core.GCRA, core.LeakyBucket:
		return bucket(alg, 10, 1, time.Second)
	case core.LeakyQueue:
		return queue(4, 1, time.Second, 6*time.Second)
	}
	return window(alg, 10, 10*time.Second)
}

// renamed returns p under another name: the same limit, another state.
func renamed(p *core.Policy, name string) *core.Policy {
	c := core.PolicyConfig{Name: name, Algorithm: p.Algorithm(), Quota: p.Quota(), Period: p.Period(), MaxDelay: p.MaxDelay()}
	if p.Interval() > 0 {
		c.Burst = p.Burst()
	}
	return core.MustPolicy(c)
}
