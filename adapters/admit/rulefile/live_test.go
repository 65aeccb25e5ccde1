package rulefile_test

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/admit/rulefile"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
)

// tenantsFile is a rule file of one policy per tenant of ids, picked by
// the X-Tenant header, each with the burst burst gives it, and a default
// for the tenants it does not list.
func tenantsFile(t *testing.T, ids []int, burst func(i int) int) *rulefile.File {
	var pols, tiers strings.Builder
	pols.WriteString(`"tenant-default": {"quota": 1000, "period": "1h", "burst": 1000000}`)
	for k, i := range ids {
		fmt.Fprintf(&pols, `, "tenant-%d": {"quota": 1000, "period": "1h", "burst": %d}`, i, burst(i))
		if k > 0 {
			tiers.WriteString(", ")
		}
		fmt.Fprintf(&tiers, `"%d": "tenant-%d"`, i, i)
	}
	src := `{"policies": {` + pols.String() + `}, "rules": [{"key": {"header": "X-Tenant"}, "tiers": {"by": {"header": "X-Tenant"}, "default": "tenant-default", "policies": {` + tiers.String() + `}}}]}`
	f, err := rulefile.Load("tenants.json", strings.NewReader(src))
	require.NoError(t, err)
	return f
}

// view is a minimal admit.View and Writer.
type view struct {
	tenant  string
	written bool
}

func (v *view) Context() context.Context { return context.Background() }
func (v *view) Peer() netip.Addr         { return netip.MustParseAddr("192.0.2.1") }
func (v *view) Header(name string) string {
	if name == "X-Tenant" {
		return v.tenant
	}
	return ""
}
func (v *view) HeaderValues(name string) []string { return []string{v.Header(name)} }
func (v *view) Method() string                    { return "GET" }
func (v *view) Path() string                      { return "/" }
func (v *view) Route() string                     { return "/" }
func (v *view) SetHeader(string, string)          {}
func (v *view) ResponseHeader(string) string      { return "" }
func (v *view) WriteResponse(int, string, []byte) { v.written = true }

// A swap of 10,000 policies under continuous load fails no request and
// resets no unchanged policy: every unchanged tenant's count after the
// swap is every request it was sent, before and during and after; a
// changed one starts afresh; a removed one falls to the default.
func TestSwapTenThousandPoliciesUnderLoad(t *testing.T) {
	const n, changedFrom, removedFrom = 10_000, 9_000, 9_500
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	env := rulefile.Env{Store: store}
	var ids1, ids2 []int
	for i := range n + 500 {
		if i < n {
			ids1 = append(ids1, i)
		}
		if i < removedFrom || i >= n {
			ids2 = append(ids2, i)
		}
	}
	v1 := tenantsFile(t, ids1, func(int) int { return 1_000_000 })
	rules, err := rulefile.Compile(v1, env)
	require.NoError(t, err)
	engine, err := admit.New(rules.Config())
	require.NoError(t, err)
	live := rulefile.NewLive(rules, env)
	// v2: tenants from changedFrom have a new burst, those from
	// removedFrom are gone, and 500 are new.
	v2 := tenantsFile(t, ids2, func(i int) int {
		if i >= changedFrom {
			return 500_000
		}
		return 1_000_000
	})

	var sent, before, after [removedFrom]atomic.Int64
	var failed, total atomic.Int64
	var phase atomic.Int32 // 0 before the swap, 1 during, 2 after
	send := func(i int) {
		p := phase.Load()
		x := &view{tenant: fmt.Sprint(i)}
		verdict := engine.Decide(x, x)
		total.Add(1)
		sent[i].Add(1)
		switch {
		case !verdict.Proceed || x.written:
			failed.Add(1)
		case p == 0 && phase.Load() == 0:
			before[i].Add(1)
		case p == 2:
			after[i].Add(1)
		}
	}
	for i := range removedFrom { // every tenant has a count before the swap
		send(i)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k := g; ; k += 4 {
				select {
				case <-stop:
					return
				default:
				}
				send(k * 7919 % removedFrom)
			}
		})
	}
	for total.Load() < removedFrom+2_000 {
		runtime.Gosched()
	}
	phase.Store(1)
	require.NoError(t, live.Apply(v2))
	phase.Store(2)
	start := total.Load()
	for total.Load() < start+2_000 {
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()

	assert.Zero(t, failed.Load(), "failed requests")
	assert.Equal(t, v2.Version(), live.Version())
	resets := 0
	for i := range removedFrom {
		name := fmt.Sprint("tenant-", i)
		p := live.Rules().Policy(name)
		d, err := store.Adjust(context.Background(), core.Request{Key: fmt.Sprint(i), Policy: p, Cost: 0})
		require.NoError(t, err)
		if i < changedFrom {
			require.Same(t, rules.Policy(name), p)
			if d.Remaining != 1_000_000-sent[i].Load() {
				resets++
			}
			continue
		}
		// Changed: fresh, counting only what the new version decided.
		assert.LessOrEqual(t, d.Remaining, 500_000-after[i].Load(), name)
		assert.GreaterOrEqual(t, d.Remaining, 500_000-(sent[i].Load()-before[i].Load()), name)
	}
	assert.Zero(t, resets, "unchanged policies reset")

	_, x := engine.Explain(&view{tenant: "9700"}, &view{})
	assert.Equal(t, "tenant-default", x.Decider, "a removed tenant's policy stops; the default applies")
	_, x = engine.Explain(&view{tenant: "10100"}, &view{})
	assert.Equal(t, "tenant-10100", x.Decider, "an added one starts")
}
