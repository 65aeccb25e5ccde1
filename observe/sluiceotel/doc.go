// Package sluiceotel records what sluice's limits decide as OpenTelemetry
// metrics.
//
//	metrics, err := sluiceotel.New(provider, sluiceotel.WithPolicies(perIP))
//	...
//	mw, err := sluicehttp.New(admit.Config{Observer: metrics.Observe, ...})
//
// Metrics.Observe is a core.Observer: give it once, to admit.Config.Observer,
// and it sees the limiter's decisions and the concurrency limit's (named by
// backpressure.Config.Name) waits, sheds, requests in flight and limit. The
// instruments follow
// the shape of ASP.NET Core's rate-limiting ones, under
// sluice.rate_limiting.*:
//
//	requests                                 Counter        policy, result, near_limit, degraded
//	store.duration                           Histogram      policy
//	store.failures                           Counter        policy, operation, error.type
//	lease.taken, lease.returned              Counter        policy
//	queued_requests, active_requests         UpDownCounter  policy
//	request.time_in_queue                    Histogram      policy, result, class
//	shed_requests                            Counter        policy, reason, class
//	concurrency_limit, concurrency_baseline  Gauge          policy
//
// A request's result is "acquired" or "rejected"; degraded marks a decision
// made without the store. Recording allocates nothing. The key is no
// attribute unless WithKeyAttribute is given: every key would be a series of
// its own, chosen by clients.
//
// Units, attribute values, series started at zero and the cost of recording
// are in docs/observability.md.
package sluiceotel
