// Package sluiceotel records what sluice decides as OpenTelemetry metrics.
//
// There is no general semantic convention for rate limiting yet. The
// instruments follow, in shape, the stable ASP.NET Core rate-limiting ones
// (aspnetcore.rate_limiting.*), under sluice.rate_limiting.*, with store
// failures, store latency and leases added, and, for concurrency limits
// (package backpressure), requests shed and the limit:
//
//	instrument                                  kind           unit       attributes
//	sluice.rate_limiting.requests               Counter        {request}  policy, result, near_limit, degraded (, key)
//	sluice.rate_limiting.store.duration         Histogram      s          policy (, error.type)
//	sluice.rate_limiting.store.failures         Counter        {failure}  policy, operation, error.type
//	sluice.rate_limiting.lease.taken            Counter        {unit}     policy
//	sluice.rate_limiting.lease.returned         Counter        {unit}     policy
//	sluice.rate_limiting.queued_requests        UpDownCounter  {request}  policy
//	sluice.rate_limiting.request.time_in_queue  Histogram      s          policy, result, class
//	sluice.rate_limiting.active_requests        UpDownCounter  {request}  policy
//	sluice.rate_limiting.shed_requests          Counter        {request}  policy, reason, class
//	sluice.rate_limiting.concurrency_limit      Gauge          {request}  policy
//	sluice.rate_limiting.concurrency_baseline   Gauge          s          policy
//
// Attribute keys are namespaced: sluice.rate_limiting.policy,
// sluice.rate_limiting.result, sluice.rate_limiting.key,
// sluice.rate_limiting.store.operation, sluice.rate_limiting.reason and
// sluice.rate_limiting.class; error.type is OpenTelemetry's own. The policy
// is the name of the policy that decided (for a layered request, the most
// restrictive one, as the limiter reports it), absent from events that
// have none; for a concurrency limit, the name its events report under
// (core.Event.LimitName, given to backpressure.Config.Observer) and given to
// Watch.
//
// The result of a request is ASP.NET Core's, in meaning: "acquired" (the
// request was granted) or "rejected" (refused: a 429, or a 503 when the
// store failed and the limiter fails closed). Two boolean attributes say
// more: near_limit, granted close to the limit (core.NearLimit; see
// core.WithNearLimit), and degraded, decided without the store, which
// failed (by the failure mode, failing open, the default, or
// core.WithFailClosed, or by a fallback store). So the requests admitted
// are sum(result="acquired"), whatever their nearness to the limit, and
// near_limit="true" is the part of them that was close:
//
//	sum by (sluice_rate_limiting_policy) (rate(sluice_rate_limiting_requests_total{sluice_rate_limiting_result="acquired"}[5m]))
//
// A failed store call is counted once as a request, degraded, and once in
// store.failures with operation "take"; a failed Reconcile is no new request, and counts in
// store.failures alone, with operation "adjust"; a lease taken or given
// back in vain (core.LeaseFailed) with operation "lease".
// error.type is "timeout" (a deadline passed), "canceled" (the caller gave
// up) or "_OTHER".
//
// The store duration is the time the limiter waited for its store,
// fallback included, for every decision.
//
// One observer sees it all: Observe takes a concurrency limit's events too
// (a backpressure.Limiter whose Config has a Name and the Observer
// metrics.Observe, or an observer joining Observe with others), and Watch reads the limit's queue, requests in
// flight and limit at each collection. A wait in its queue ends
// "acquired", or shed: "displaced" (by a request of a higher class),
// "wait_timeout" or "canceled". A request is shed for one of those
// reasons, or at once: "saturated", "key_saturated", "queue_full",
// "too_many_keys". The class is "critical", "default" or "sheddable".
// A LeakyQueue policy's wait for its turn (core.Limiter.TakeTurn) counts in
// time_in_queue under the policy, without a class: "acquired" when the
// turn came, "canceled" (and a request shed) when the client went first.
//
// A counter has no series until its first event: WithPolicies starts the
// requests, store failures, leases and (for a LeakyQueue policy) requests
// shed of the policies it names at zero, and Watch the requests a
// concurrency limit sheds, for every reason and class, so that an alert on
// any of them has a series to evaluate from the start. time_in_queue, a
// histogram, has none until the first wait: OpenTelemetry starts a
// histogram's series with an observation only.
//
// Recording allocates nothing: the attribute sets of a policy are built
// when first needed and kept (for up to 1024 policies and as many limiter
// names; past that, each event builds its own). WithKeyAttribute costs a
// set per request.
//
// # Buckets, keys and cost
//
// The store duration's buckets run from 1 µs (the memory store) through
// Redis's tens of µs to milliseconds, up to 250 ms, past the Redis store's
// 50 ms deadline. Leases (the Redis store's WithLease) count units taken
// from Redis and given back: taken − returned is what was spent locally.
// Watch reads a concurrency limit at each collection, so that its gauges
// are right whether or not anything happens; unregister it when the
// limiter goes.
//
// The key is no attribute unless WithKeyAttribute is given, and then only
// on requests: every key becomes a time series of its own, and a per-IP
// limit makes one per client ever seen, a number an attacker chooses. Keys
// may also be personal data or secrets.
//
// What remains of the cost is the SDK's own work, a counter and a histogram
// per decision. In one run on a machine loaded far past its two cores (load
// average 13–15, so read the ratios, not the figures), medians of six: a
// memory-store decision took 303 ns alone and 1,847 ns with the metrics; an
// event cost 1,469 ns to record, a store failure 1,986 ns, and with the key
// attribute 6,381 ns and 4 allocations. A View with AggregationDrop on
// sluice.rate_limiting.store.duration halved the cost of an event in
// another run.
//
//	go test ./observe/sluiceotel -run '^$' -bench 'Take|Observe' -benchmem -cpu 1 -count 6
//
// examples/otel serves a site with its metrics on /metrics through
// OpenTelemetry's Prometheus exporter, and its test checks each policy's
// counts in the scrape exactly.
package sluiceotel
