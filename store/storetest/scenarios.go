package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type scenario struct {
	name string
	run  func(t *testing.T, h *harness)
}

var scenarios = []scenario{
	{"WorkedExample", workedExample},
	{"Drill1", drill1},
	{"BoundaryBurst", boundaryBurst},
	{"ExactFigures", exactFigures},
	{"Costs", costs},
	{"InvalidRequests", invalidRequests},
	{"Refunds", refunds},
	{"Charges", charges},
	{"Layered", layered},
	{"LayeredSameKeyTwice", layeredSameKeyTwice},
	{"KeyIsolation", keyIsolation},
	{"Reset", reset},
	{"Concurrent", concurrent},
	{"RetryAfterIsExact", retryAfterIsExact},
	{"HostileValues", hostileValues},
	{"ShapingQueue", shapingQueue},
	{"QueueDelayN", queueDelayN},
	{"QueueLength", queueLength},
	{"QueueGivesTurnsBack", queueGivesTurnsBack},
	{"QueueLayered", queueLayered},
}

// costs: weighted requests take their cost; a cost above the burst is denied
// at once and takes nothing.
func costs(t *testing.T, h *harness) {
	for _, alg := range immediateAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := somePolicy(alg)
			d := h.take("k", p, 4)
			require.True(t, d.Allowed)
			assert.Equal(t, int64(6), d.Remaining)
			d = h.take("k", p, 11)
			assert.False(t, d.Allowed)
			assert.True(t, d.Impossible)
			assert.Zero(t, d.RetryAfter)
			assert.Equal(t, int64(6), d.Remaining, "an impossible cost takes nothing")
			d = h.take("k", p, 7)
			assert.False(t, d.Allowed)
			assert.False(t, d.Impossible)
			assert.Positive(t, d.RetryAfter)
			d = h.take("k", p, 6)
			assert.True(t, d.Allowed)
			assert.Zero(t, d.Remaining)
		})
	}
}

func invalidRequests(t *testing.T, h *harness) {
	p := somePolicy(core.GCRA)
	for _, cost := range []int64{0, -1} {
		_, err := h.store.Take(context.Background(), core.Request{Key: h.key("k"), Policy: p, Cost: cost})
		assert.ErrorAs(t, err, new(*core.RequestError), "cost %d", cost)
	}
	_, err := h.store.Take(context.Background(), core.Request{Key: h.key("k"), Cost: 1})
	assert.ErrorAs(t, err, new(*core.RequestError))
	err = h.store.TakeAll(context.Background(), []core.Request{{Key: h.key("k"), Policy: p, Cost: 1}}, nil)
	assert.ErrorAs(t, err, new(*core.RequestError))
	err = h.store.TakeAll(context.Background(), []core.Request{{Key: h.key("k"), Policy: p, Cost: 1}, {Key: h.key("k"), Policy: p}}, make([]core.Decision, 2))
	assert.ErrorAs(t, err, new(*core.RequestError))
	assert.Equal(t, int64(10), h.take("k", p, 1).Remaining+1, "rejected requests took nothing")
}

// refunds: units given back are available again, never beyond full.
func refunds(t *testing.T, h *harness) {
	for _, alg := range immediateAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := somePolicy(alg)
			require.True(t, h.take("k", p, 8).Allowed)
			d := h.adjust("k", p, -5)
			assert.Equal(t, int64(7), d.Remaining)
			assert.True(t, h.take("k", p, 7).Allowed)
			assert.False(t, h.take("k", p, 1).Allowed)
			d = h.adjust("k", p, -100)
			assert.Equal(t, int64(10), d.Remaining, "never beyond full")
			assert.Equal(t, 10, h.count("k", p, 11))
		})
	}
}

// charges: a positive adjustment takes units even past the limit, and the key
// stays denied until the debt is repaid.
func charges(t *testing.T, h *harness) {
	for _, alg := range allAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := somePolicy(alg)
			require.True(t, h.take("k", p, 6).Allowed)
			d := h.adjust("k", p, 7)
			assert.Zero(t, d.Remaining)
			assert.False(t, d.Allowed, "in debt")
			deny := h.take("k", p, 1)
			assert.False(t, deny.Allowed)
			assert.Greater(t, deny.RetryAfter, time.Duration(0))
		})
	}
}

// layered: per-IP 10 and per-user 3 as one decision. A denial by the user
// layer takes nothing from the IP layer; the reported decision is the denial.
func layered(t *testing.T, h *harness) {
	for _, alg := range immediateAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			ip := somePolicy(alg)
			var user *core.Policy
			if alg == core.TokenBucket || alg == core.GCRA || alg == core.LeakyBucket {
				user = core.MustPolicy(core.PolicyConfig{Name: "user", Algorithm: alg, Quota: 1, Period: time.Second, Burst: 3})
			} else {
				user = core.MustPolicy(core.PolicyConfig{Name: "user", Algorithm: alg, Quota: 3, Period: 10 * time.Second})
			}
			rs := []core.Request{{Key: h.key("ip"), Policy: ip, Cost: 1}, {Key: h.key("user"), Policy: user, Cost: 1}}
			ds := make([]core.Decision, 2)
			for i := range 3 {
				require.NoError(t, h.store.TakeAll(context.Background(), rs, ds))
				require.True(t, ds[0].Allowed && ds[1].Allowed, "request %d", i)
				assert.Equal(t, int64(9-i), ds[0].Remaining)
				assert.Equal(t, int64(2-i), ds[1].Remaining)
			}
			for range 5 {
				require.NoError(t, h.store.TakeAll(context.Background(), rs, ds))
				assert.True(t, ds[0].Allowed, "the IP layer alone would pass")
				assert.Equal(t, int64(7), ds[0].Remaining, "and reports its standing without the request")
				assert.False(t, ds[1].Allowed)
				assert.Positive(t, ds[1].RetryAfter)
				assert.Same(t, user, storekit.MostRestrictive(ds).Policy)
			}
			assert.Equal(t, int64(6), h.take("ip", ip, 1).Remaining, "denials took nothing from the IP layer")
		})
	}
}

// layeredSameKeyTwice: two layers on one key and policy take twice.
func layeredSameKeyTwice(t *testing.T, h *harness) {
	for _, alg := range immediateAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := somePolicy(alg)
			rs := []core.Request{{Key: h.key("k"), Policy: p, Cost: 4}, {Key: h.key("k"), Policy: p, Cost: 4}}
			ds := make([]core.Decision, 2)
			require.NoError(t, h.store.TakeAll(context.Background(), rs, ds))
			require.True(t, ds[0].Allowed && ds[1].Allowed)
			assert.Equal(t, int64(2), ds[1].Remaining)
			require.NoError(t, h.store.TakeAll(context.Background(), rs, ds))
			assert.False(t, ds[1].Allowed && ds[0].Allowed)
			assert.Equal(t, int64(0), h.take("k", p, 2).Remaining, "the denied pair took nothing")
		})
	}
}

func keyIsolation(t *testing.T, h *harness) {
	for _, alg := range allAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := somePolicy(alg)
			other := renamed(p, "other")
			assert.Equal(t, 10, h.count("a", p, 12))
			assert.Equal(t, 10, h.count("b", p, 12), "another key is untouched")
			assert.Equal(t, 10, h.count("a", other, 12), "the same key under another policy is untouched")
		})
	}
}

func reset(t *testing.T, h *harness) {
	for _, alg := range allAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := somePolicy(alg)
			assert.Equal(t, 10, h.count("k", p, 12))
			require.NoError(t, h.store.Reset(context.Background(), h.key("k"), p))
			assert.Equal(t, 10, h.count("k", p, 12))
		})
	}
}

// concurrent: many goroutines on one key admit exactly the quota.
func concurrent(t *testing.T, h *harness) {
	for _, alg := range allAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			var p *core.Policy
			switch alg {
			case core.TokenBucket, core.GCRA, core.LeakyBucket:
				p = bucket(alg, 100, 1, time.Hour)
			case core.LeakyQueue:
				p = queue(50, 1, time.Hour, 50*time.Hour) // 50 at once, 50 waiting
			default:
				p = window(alg, 100, time.Hour)
			}
			var admitted atomic.Int64
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 20 {
						d, err := h.store.Take(context.Background(), core.Request{Key: h.key("hot"), Policy: p, Cost: 1})
						if err != nil {
							panic(fmt.Sprintf("Take: %v", err))
						}
						if d.Allowed {
							admitted.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			assert.Equal(t, int64(100), admitted.Load())
		})
	}
}
