package sluiceotel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/observe/sluiceotel"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	perIP = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 1, Period: time.Minute, Burst: 3})
	login = core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.GCRA, Quota: 1, Period: time.Minute, Burst: 1})
)

// The attribute sets the tests expect, encoded as attribute.Set does:
// sorted by key, comma-separated.
const (
	allowed         = "sluice.rate_limiting.degraded=false,sluice.rate_limiting.near_limit=false,sluice.rate_limiting.policy=per-ip,sluice.rate_limiting.result=acquired"
	nearLimit       = "sluice.rate_limiting.degraded=false,sluice.rate_limiting.near_limit=true,sluice.rate_limiting.policy=per-ip,sluice.rate_limiting.result=acquired"
	denied          = "sluice.rate_limiting.degraded=false,sluice.rate_limiting.near_limit=false,sluice.rate_limiting.policy=per-ip,sluice.rate_limiting.result=rejected"
	degradedAllowed = "sluice.rate_limiting.degraded=true,sluice.rate_limiting.near_limit=false,sluice.rate_limiting.policy=per-ip,sluice.rate_limiting.result=acquired"
	degradedDenied  = "sluice.rate_limiting.degraded=true,sluice.rate_limiting.near_limit=false,sluice.rate_limiting.policy=per-ip,sluice.rate_limiting.result=rejected"
	onlyPerIP       = "sluice.rate_limiting.policy=per-ip"
)

// requests is the attribute set of a request to policy with result,
// neither near the limit nor degraded unless it says so.
func requests(policy, result string, near bool) string {
	return fmt.Sprintf("sluice.rate_limiting.degraded=false,sluice.rate_limiting.near_limit=%t,sluice.rate_limiting.policy=%s,sluice.rate_limiting.result=%s", near, policy, result)
}

func failure(op, errType string) string {
	return "error.type=" + errType + ",sluice.rate_limiting.policy=per-ip,sluice.rate_limiting.store.operation=" + op
}

// fixture is Metrics on an SDK provider read by hand, and a limiter
// reporting to it on a memory store whose clock moves only when told.
type fixture struct {
	reader  *sdkmetric.ManualReader
	metrics *sluiceotel.Metrics
	clock   *sluicetest.ManualClock
}

func newFixture(t *testing.T, opts ...sluiceotel.Option) *fixture {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { require.NoError(t, provider.Shutdown(context.Background())) })
	m, err := sluiceotel.New(provider, opts...)
	require.NoError(t, err)
	return &fixture{reader: reader, metrics: m, clock: sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))}
}

// limiter returns a limiter on store (a memory store if nil) reporting to
// the fixture's metrics.
func (f *fixture) limiter(t *testing.T, store core.Store, opts ...core.Option) *core.Limiter {
	t.Helper()
	if store == nil {
		mem, err := memory.New(memory.WithClock(f.clock))
		require.NoError(t, err)
		t.Cleanup(func() { _ = mem.Close() })
		store = mem
	}
	l, err := core.NewLimiter(store, append(opts, core.WithObserver(f.metrics.Observe))...)
	require.NoError(t, err)
	return l
}

// collect reads every instrument, by name.
func (f *fixture) collect(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, f.reader.Collect(context.Background(), &rm))
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, sluiceotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	return got
}

// sums returns the points of the Int64 sum named name, by attribute set.
func sums(t *testing.T, ms map[string]metricdata.Metrics, name string) map[string]int64 {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		return nil
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a %T", name, m.Data)
	got := map[string]int64{}
	for _, p := range sum.DataPoints {
		got[encode(p.Attributes)] = p.Value
	}
	return got
}

// counts returns the counts of the histogram named name, by attribute set.
func counts(t *testing.T, ms map[string]metricdata.Metrics, name string) map[string]uint64 {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		return nil
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a %T", name, m.Data)
	got := map[string]uint64{}
	for _, p := range h.DataPoints {
		got[encode(p.Attributes)] = p.Count
	}
	return got
}

func encode(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }

func TestRequestsByResult(t *testing.T) {
	f := newFixture(t)
	l := f.limiter(t, nil)
	ctx := context.Background()
	// Burst 3: remaining 2 and 1 are allowed, 0 is near the limit (10% of
	// 3), then two denials.
	for range 5 {
		_, err := l.Take(ctx, core.Request{Key: "203.0.113.7", Policy: perIP, Cost: 1})
		require.NoError(t, err)
	}
	ms := f.collect(t)

	assert.Equal(t, map[string]int64{allowed: 2, nearLimit: 1, denied: 2}, sums(t, ms, "sluice.rate_limiting.requests"))
	assert.Equal(t, map[string]uint64{onlyPerIP: 5}, counts(t, ms, "sluice.rate_limiting.store.duration"))
	assert.Nil(t, sums(t, ms, "sluice.rate_limiting.store.failures"), "nothing failed")

	req := ms["sluice.rate_limiting.requests"]
	assert.Equal(t, "{request}", req.Unit)
	assert.NotEmpty(t, req.Description)
	sum := req.Data.(metricdata.Sum[int64])
	assert.True(t, sum.IsMonotonic)
	assert.Equal(t, metricdata.CumulativeTemporality, sum.Temporality)
	dur := ms["sluice.rate_limiting.store.duration"]
	assert.Equal(t, "s", dur.Unit)
	h := dur.Data.(metricdata.Histogram[float64])
	require.Len(t, h.DataPoints, 1)
	bounds := h.DataPoints[0].Bounds
	assert.Equal(t, 0.000001, bounds[0], "a memory store answers within microseconds")
	assert.Equal(t, 0.25, bounds[len(bounds)-1], "a store call's deadline is tens of milliseconds")
	assert.Greater(t, h.DataPoints[0].Sum, 0.0)
}

func TestLayeredRequestReportsTheMostRestrictivePolicy(t *testing.T) {
	f := newFixture(t)
	l := f.limiter(t, nil)
	ctx := context.Background()
	rs := []core.Request{{Key: "ip", Policy: perIP, Cost: 1}, {Key: "ip", Policy: login, Cost: 1}}
	ds := make([]core.Decision, 2)
	for range 2 {
		_, err := l.TakeAll(ctx, rs, ds)
		require.NoError(t, err)
	}
	// The first: login's remaining 0 is nearer its limit than per-ip's 2.
	// The second: login denies.
	assert.Equal(t, map[string]int64{
		requests("login", "acquired", true):  1,
		requests("login", "rejected", false): 1,
	}, sums(t, f.collect(t), "sluice.rate_limiting.requests"))
}

// brokenStore fails every call with err.
type brokenStore struct{ err error }

func (s brokenStore) Take(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, s.err
}
func (s brokenStore) TakeAll(context.Context, []core.Request, []core.Decision) error { return s.err }
func (s brokenStore) Adjust(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, s.err
}

// ReturnTurn gives a turn back as Adjust gives units back.
func (s brokenStore) ReturnTurn(ctx context.Context, r core.Request, _ time.Duration) (core.Decision, error) {
	r.Cost = -r.Cost
	return s.Adjust(ctx, r)
}
func (s brokenStore) Reset(context.Context, string, *core.Policy) error { return s.err }

var errRefused = errors.New("connection refused")

func TestStoreFailures(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	open := f.limiter(t, brokenStore{errRefused})
	closed := f.limiter(t, brokenStore{fmt.Errorf("redis: %w", context.DeadlineExceeded)}, core.WithFailClosed(0))
	for range 3 {
		_, err := open.Take(ctx, core.Request{Key: "k", Policy: perIP, Cost: 1})
		require.NoError(t, err)
	}
	for range 2 {
		_, err := closed.Take(ctx, core.Request{Key: "k", Policy: perIP, Cost: 1})
		require.NoError(t, err)
	}
	ms := f.collect(t)

	assert.Equal(t, map[string]int64{degradedAllowed: 3, degradedDenied: 2}, sums(t, ms, "sluice.rate_limiting.requests"))
	assert.Equal(t, map[string]int64{failure("take", "_OTHER"): 3, failure("take", "timeout"): 2},
		sums(t, ms, "sluice.rate_limiting.store.failures"))
	assert.Equal(t, map[string]uint64{
		"error.type=_OTHER,sluice.rate_limiting.policy=per-ip":  3,
		"error.type=timeout,sluice.rate_limiting.policy=per-ip": 2,
	}, counts(t, ms, "sluice.rate_limiting.store.duration"))
	assert.Equal(t, "{failure}", ms["sluice.rate_limiting.store.failures"].Unit)
}

func TestFallbackDecisionsAreDegraded(t *testing.T) {
	f := newFixture(t)
	mem, err := memory.New(memory.WithClock(f.clock))
	require.NoError(t, err)
	defer mem.Close()
	l := f.limiter(t, brokenStore{context.Canceled}, core.WithFallback(mem, 1))
	for range 4 {
		_, err := l.Take(context.Background(), core.Request{Key: "k", Policy: perIP, Cost: 1})
		require.NoError(t, err)
	}
	ms := f.collect(t)
	// The fallback applies the whole limit (burst 3) locally.
	assert.Equal(t, map[string]int64{degradedAllowed: 3, degradedDenied: 1}, sums(t, ms, "sluice.rate_limiting.requests"))
	assert.Equal(t, map[string]int64{failure("take", "canceled"): 4}, sums(t, ms, "sluice.rate_limiting.store.failures"))
}

// adjustFails is a memory store whose Adjust fails.
type adjustFails struct{ *memory.Store }

func (adjustFails) Adjust(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, errRefused
}

func TestFailedReconcileIsAStoreFailureNotARequest(t *testing.T) {
	f := newFixture(t)
	mem, err := memory.New(memory.WithClock(f.clock))
	require.NoError(t, err)
	defer mem.Close()
	l := f.limiter(t, adjustFails{mem})
	ctx := context.Background()
	res, err := l.Reserve(ctx, []core.Request{{Key: "k", Policy: perIP, Cost: 1}}, nil)
	require.NoError(t, err)
	require.Error(t, res.Reconcile(ctx, 2))
	ms := f.collect(t)

	assert.Equal(t, map[string]int64{allowed: 1}, sums(t, ms, "sluice.rate_limiting.requests"))
	assert.Equal(t, map[string]int64{failure("adjust", "_OTHER"): 1}, sums(t, ms, "sluice.rate_limiting.store.failures"))
	assert.Equal(t, map[string]uint64{onlyPerIP: 1}, counts(t, ms, "sluice.rate_limiting.store.duration"), "the reservation's decision alone")
}

// Stores that lease (store/redis/redisstore's WithLease) report lease outcomes to the
// limiter's observer; those without a decision carry no policy.
func TestLeases(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	withPolicy := core.Decision{Policy: perIP, Allowed: true}
	f.metrics.Observe(ctx, core.Event{Kind: core.LeaseTaken, Key: "k", Decision: withPolicy, Units: 100})
	f.metrics.Observe(ctx, core.Event{Kind: core.LeaseTaken, Key: "k", Decision: withPolicy, Units: 50})
	f.metrics.Observe(ctx, core.Event{Kind: core.LeaseTaken, Key: "k", Units: 7})
	f.metrics.Observe(ctx, core.Event{Kind: core.LeaseReturned, Key: "k", Decision: withPolicy, Units: 30})
	f.metrics.Observe(ctx, core.Event{Kind: core.LeaseFailed, Key: "k", Err: errRefused, Units: 100})
	f.metrics.Observe(ctx, core.Event{Kind: core.LeaseFailed, Key: "k", Decision: withPolicy, Err: context.DeadlineExceeded})
	ms := f.collect(t)

	assert.Equal(t, map[string]int64{onlyPerIP: 150, "": 7}, sums(t, ms, "sluice.rate_limiting.lease.taken"))
	assert.Equal(t, map[string]int64{onlyPerIP: 30}, sums(t, ms, "sluice.rate_limiting.lease.returned"))
	assert.Equal(t, map[string]int64{
		"error.type=_OTHER,sluice.rate_limiting.store.operation=lease": 1,
		failure("lease", "timeout"):                                    1,
	}, sums(t, ms, "sluice.rate_limiting.store.failures"))
	assert.Nil(t, sums(t, ms, "sluice.rate_limiting.requests"), "leases are no requests")
	assert.Equal(t, "{unit}", ms["sluice.rate_limiting.lease.taken"].Unit)
}

func TestKeyAttributeIsOptIn(t *testing.T) {
	f := newFixture(t, sluiceotel.WithKeyAttribute())
	l := f.limiter(t, nil)
	ctx := context.Background()
	for _, key := range []string{"a", "b", "a"} {
		_, err := l.Take(ctx, core.Request{Key: key, Policy: perIP, Cost: 1})
		require.NoError(t, err)
	}
	ms := f.collect(t)
	assert.Equal(t, map[string]int64{
		strings.Replace(allowed, ",", ",sluice.rate_limiting.key=a,", 1): 2,
		strings.Replace(allowed, ",", ",sluice.rate_limiting.key=b,", 1): 1,
	}, sums(t, ms, "sluice.rate_limiting.requests"))
	assert.Equal(t, map[string]uint64{onlyPerIP: 3}, counts(t, ms, "sluice.rate_limiting.store.duration"), "never on the histogram")
}

func TestNilProviderIsTheGlobalOne(t *testing.T) {
	m, err := sluiceotel.New(nil)
	require.NoError(t, err)
	// The global provider records nothing until one is set: no panic.
	m.Observe(context.Background(), core.Event{Kind: core.Allowed, Decision: core.Decision{Policy: perIP}})
}

// Recording a decision allocates nothing on the SDK: the attribute sets
// are built once per policy.
func TestObserveAllocatesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	events := []core.Event{
		{Kind: core.Allowed, Key: "k", Decision: core.Decision{Policy: perIP, Allowed: true}, Latency: time.Microsecond},
		{Kind: core.Denied, Key: "k", Decision: core.Decision{Policy: perIP}, Latency: time.Microsecond},
		{Kind: core.StoreFailed, Key: "k", Decision: core.Decision{Policy: perIP, Allowed: true, Degraded: true}, Err: errRefused, Latency: time.Millisecond},
		{Kind: core.LeaseTaken, Key: "k", Decision: core.Decision{Policy: perIP}, Units: 10},
	}
	for _, e := range events {
		f.metrics.Observe(ctx, e) // first sight builds the sets
		allocs := testing.AllocsPerRun(100, func() { f.metrics.Observe(ctx, e) })
		assert.Zero(t, allocs, "%v", e.Kind)
	}
	observe := f.metrics.Observe // as a backpressure.Limiter named "checkout" reports
	displaced, saturated := &backpressure.ShedError{Reason: backpressure.Displaced}, &backpressure.ShedError{Reason: backpressure.Saturated}
	for _, e := range []core.Event{
		{Kind: core.Waited, LimitName: "checkout", Class: core.Critical, Waited: time.Millisecond},
		{Kind: core.Shed, LimitName: "checkout", Class: core.Sheddable, Waited: time.Millisecond, Err: displaced},
		{Kind: core.Shed, LimitName: "checkout", Err: saturated},
		{Kind: core.Queued, LimitName: "checkout"},
		{Kind: core.LimitChanged, LimitName: "checkout", Limit: 3},
	} {
		observe(ctx, e)
		assert.Zero(t, testing.AllocsPerRun(100, func() { observe(ctx, e) }), "%v", e.Kind)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for _, e := range []core.Event{
		{Kind: core.Waited, Key: "k", Decision: core.Decision{Policy: perIP, Allowed: true}, Waited: time.Millisecond},
		{Kind: core.Shed, Key: "k", Decision: core.Decision{Policy: perIP, Allowed: true}, Waited: time.Millisecond, Err: context.Canceled},
	} {
		f.metrics.Observe(canceled, e)
		assert.Zero(t, testing.AllocsPerRun(100, func() { f.metrics.Observe(canceled, e) }), "%v", e.Kind)
	}
}
