package sluiceotel

import (
	"context"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// WithPolicies starts the counters of each policy at zero (requests by
// result, store failures, leases, and a LeakyQueue policy's requests shed),
// so that alerts have a series before the first event. A policy left out
// starts its series at its first event; with WithKeyAttribute, requests
// start none.
func WithPolicies(policies ...*core.Policy) Option {
	return func(m *Metrics) { m.seeds = append(m.seeds, policies...) }
}

// startAtZero adds zero to every series of the policies WithPolicies named.
// time_in_queue is a histogram, whose series OpenTelemetry starts with an
// observation only: it has none before the first wait.
func (m *Metrics) startAtZero() {
	ctx := context.Background()
	for _, name := range m.limits {
		m.startShedAtZero(m.names.get(name, name))
	}
	for _, p := range m.seeds {
		if p == nil {
			continue
		}
		ss := m.policies.get(p, p.Name())
		if !m.withKey {
			for _, r := range results {
				m.requests.Add(ctx, 0, ss.get(slot{kind: kindRequest, result: r}).add...)
			}
		}
		for op := range operation(len(operationNames)) {
			for et := range errorType(len(errorTypeNames)) {
				m.storeFailures.Add(ctx, 0, ss.get(slot{kind: kindFailure, op: op, err: et}).add...)
			}
		}
		m.leaseTaken.Add(ctx, 0, ss.get(slot{kind: kindPolicy}).add...)
		m.leaseReturned.Add(ctx, 0, ss.get(slot{kind: kindPolicy}).add...)
		if p.Algorithm() == core.LeakyQueue {
			m.shed.Add(ctx, 0, ss.get(slot{kind: kindShed, reason: reasonOf(backpressure.Canceled), class: classNone}).add...)
		}
	}
}

// WithLimits starts the series of each concurrency limit named (its
// backpressure.Config.Name) at zero, as WithPolicies does for policies: its
// requests queued and in flight, and its requests shed, by reason and
// class.
func WithLimits(names ...string) Option {
	return func(m *Metrics) { m.limits = append(m.limits, names...) }
}

// startShedAtZero starts a concurrency limit's requests queued, in flight
// and shed, for every reason and class, at zero.
func (m *Metrics) startShedAtZero(ss *sets) {
	ctx := context.Background()
	m.queued.Add(ctx, 0, ss.get(slot{kind: kindPolicy}).add...)
	m.active.Add(ctx, 0, ss.get(slot{kind: kindPolicy}).add...)
	for r := reason(1); r < reasonOther; r++ { // every reason to shed but acquired and _OTHER
		for _, c := range [...]class{classDefault, classCritical, classSheddable} {
			m.shed.Add(ctx, 0, ss.get(slot{kind: kindShed, reason: r, class: c}).add...)
		}
	}
}
