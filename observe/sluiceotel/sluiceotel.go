package sluiceotel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/debug"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sluice-go/sluice/core"
)

// ScopeName is the instrumentation scope of the meter Metrics records with:
// the package's import path. Views select sluice's instruments by it.
const ScopeName = "github.com/sluice-go/sluice/observe/sluiceotel"

// Metrics records sluice's events on OpenTelemetry instruments. Its Observe
// method is the core.Observer to give a Limiter. It is safe for concurrent
// use.
type Metrics struct {
	requests      metric.Int64Counter
	storeDuration metric.Float64Histogram
	storeFailures metric.Int64Counter
	leaseTaken    metric.Int64Counter
	leaseReturned metric.Int64Counter
	timeInQueue   metric.Float64Histogram
	shed          metric.Int64Counter
	queued        metric.Int64UpDownCounter
	active        metric.Int64UpDownCounter
	limit         metric.Int64Gauge
	baseline      metric.Float64Gauge

	withKey  bool
	seeds    []*core.Policy      // WithPolicies
	limits   []string            // WithLimits
	policies cache[*core.Policy] // attribute sets by policy
	names    cache[string]       // by a backpressure limiter's name
}

// Option configures Metrics.
type Option func(*Metrics)

// WithKeyAttribute adds the limited key to sluice.rate_limiting.requests as
// sluice.rate_limiting.key. Leave it off unless the keys are few and known:
// every key is a series of its own, and each request allocates its
// attribute set.
func WithKeyAttribute() Option {
	return func(m *Metrics) { m.withKey = true }
}

// New returns Metrics recording on a meter from provider, named ScopeName;
// a nil provider means the global one (otel.GetMeterProvider).
func New(provider metric.MeterProvider, opts ...Option) (*Metrics, error) {
	if provider == nil {
		provider = otel.GetMeterProvider()
	}
	meter := provider.Meter(ScopeName, metric.WithInstrumentationVersion(version()))
	m := &Metrics{}
	for _, o := range opts {
		o(m)
	}
	var errs [11]error
	m.requests, errs[0] = meter.Int64Counter("sluice.rate_limiting.requests",
		metric.WithUnit("{request}"),
		metric.WithDescription("Number of requests a rate limiter decided, by policy and result."))
	m.storeDuration, errs[1] = meter.Float64Histogram("sluice.rate_limiting.store.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time a rate limiter waited for its store to decide, fallback included."),
		metric.WithExplicitBucketBoundaries(storeBuckets...))
	m.storeFailures, errs[2] = meter.Int64Counter("sluice.rate_limiting.store.failures",
		metric.WithUnit("{failure}"),
		metric.WithDescription("Number of store calls that failed, by operation and error type."))
	m.leaseTaken, errs[3] = meter.Int64Counter("sluice.rate_limiting.lease.taken",
		metric.WithUnit("{unit}"),
		metric.WithDescription("Units leased from the shared store, to be spent locally."))
	m.leaseReturned, errs[4] = meter.Int64Counter("sluice.rate_limiting.lease.returned",
		metric.WithUnit("{unit}"),
		metric.WithDescription("Leased units given back to the shared store unspent."))
	m.timeInQueue, errs[5] = meter.Float64Histogram("sluice.rate_limiting.request.time_in_queue",
		metric.WithUnit("s"),
		metric.WithDescription("Time a request waited in a limiter's queue, by how the wait ended."),
		metric.WithExplicitBucketBoundaries(queueBuckets...))
	m.shed, errs[6] = meter.Int64Counter("sluice.rate_limiting.shed_requests",
		metric.WithUnit("{request}"),
		metric.WithDescription("Number of requests a concurrency limit shed, or that left a queue unserved, by reason and class."))
	m.queued, errs[7] = meter.Int64UpDownCounter("sluice.rate_limiting.queued_requests",
		metric.WithUnit("{request}"),
		metric.WithDescription("Number of requests waiting in a limiter's queue."))
	m.active, errs[8] = meter.Int64UpDownCounter("sluice.rate_limiting.active_requests",
		metric.WithUnit("{request}"),
		metric.WithDescription("Number of requests holding a slot of a concurrency limiter."))
	m.limit, errs[9] = meter.Int64Gauge("sluice.rate_limiting.concurrency_limit",
		metric.WithUnit("{request}"),
		metric.WithDescription("Number of requests a concurrency limiter admits at once."))
	m.baseline, errs[10] = meter.Float64Gauge("sluice.rate_limiting.concurrency_baseline",
		metric.WithUnit("s"),
		metric.WithDescription("Latency an adaptive concurrency limit judges latency against, measured at a low concurrency."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("sluiceotel: %w", err)
	}
	m.startAtZero()
	return m, nil
}

// Observe records e. It is a core.Observer:
//
//	limiter, err := core.NewLimiter(store, core.WithObserver(metrics.Observe))
func (m *Metrics) Observe(ctx context.Context, e core.Event) {
	if e.LimitName != "" { // a concurrency limit's or a dependency link's
		m.observeLimit(ctx, m.names.get(e.LimitName, e.LimitName), e)
		return
	}
	p := e.Decision.Policy
	ss := m.policies.get(p, policyName(p))
	switch e.Kind {
	case core.Allowed, core.NearLimit, core.Denied:
		m.addRequest(ctx, ss, resultOf(e.Kind, e.Decision), e.Key)
		m.storeDuration.Record(ctx, e.Latency.Seconds(), ss.get(slot{kind: kindPolicy}).record...)
	case core.StoreFailed:
		et := errorTypeOf(e.Err)
		if isAdjust(e.Err) {
			m.storeFailures.Add(ctx, 1, ss.get(slot{kind: kindFailure, op: opAdjust, err: et}).add...)
			return
		}
		m.addRequest(ctx, ss, resultOf(e.Kind, e.Decision), e.Key)
		m.storeDuration.Record(ctx, e.Latency.Seconds(), ss.get(slot{kind: kindFailedCall, err: et}).record...)
		m.storeFailures.Add(ctx, 1, ss.get(slot{kind: kindFailure, op: opTake, err: et}).add...)
	case core.LeaseTaken:
		m.leaseTaken.Add(ctx, e.Units, ss.get(slot{kind: kindPolicy}).add...)
	case core.LeaseReturned:
		m.leaseReturned.Add(ctx, e.Units, ss.get(slot{kind: kindPolicy}).add...)
	case core.LeaseFailed:
		m.storeFailures.Add(ctx, 1, ss.get(slot{kind: kindFailure, op: opLease, err: errorTypeOf(e.Err)}).add...)
	case core.Waited, core.Shed: // a LeakyQueue's turn (Limiter.TakeTurn)
		m.observeWait(ctx, ss, e)
	}
	// Outcomes added later are ignored until they are given a case here.
}

func (m *Metrics) addRequest(ctx context.Context, ss *sets, r result, key string) {
	s := slot{kind: kindRequest, result: r}
	if !m.withKey {
		m.requests.Add(ctx, 1, ss.get(s).add...)
		return
	}
	if m.requests.Enabled(ctx) {
		kvs := append(s.attributes(ss.name), keyKey.String(key))
		m.requests.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(kvs...)))
	}
}

// isAdjust reports whether err is a failure to settle a reservation
// (Reservation.Reconcile), which the limiter reports as StoreFailed too:
// whether the first *core.StoreError in err's tree, as errors.As finds it,
// is an adjustment's. It walks the tree itself, where errors.As would
// allocate its target.
func isAdjust(err error) bool {
	se, _ := find(err, func(err error) bool { _, ok := err.(*core.StoreError); return ok }).(*core.StoreError)
	return se != nil && se.Op == "adjust"
}

// errorTypeOf classifies err for error.type, in a few values that keep the
// number of series small.
func errorTypeOf(err error) errorType {
	switch {
	case errors.Is(err, context.DeadlineExceeded), find(err, isNetTimeout) != nil:
		return errTimeout
	case errors.Is(err, context.Canceled):
		return errCanceled
	}
	return errOther
}

func isNetTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// find returns the first error in err's tree, in the order errors.As
// visits it, that match reports true for, or nil.
func find(err error, match func(error) bool) error {
	for err != nil {
		if match(err) {
			return err
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if found := find(e, match); found != nil {
					return found
				}
			}
			return nil
		default:
			return nil
		}
	}
	return nil
}

// version is the sluice module's version as the program was built with it:
// "(devel)" in sluice's own tests, empty if the program has no build
// information.
func version() string {
	const module = "github.com/sluice-go/sluice"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	if bi.Main.Path == module {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == module {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}

// Bucket boundaries, in seconds. A memory store answers in about a
// microsecond, Redis in tens of microseconds to milliseconds, and a store
// call gives up after tens of milliseconds (store/redis/redisstore: 50 ms by default).
var storeBuckets = []float64{
	0.000001, 0.0000025, 0.000005,
	0.00001, 0.000025, 0.00005,
	0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05,
	0.1, 0.25,
}

// A queued request waits milliseconds to seconds: OpenTelemetry's HTTP
// duration buckets.
var queueBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
