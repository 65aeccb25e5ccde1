package core

import (
	"context"
	"fmt"
	"time"
)

// Observer sees what the limits do: every decision a Limiter makes, the
// work a store does on its own (leases), a request's wait in a shaping
// queue (Limiter.TakeTurn) and a concurrency limit's waits, sheds and
// changes of limit (package backpressure), so that one Observer (metrics,
// logs, or both through Observers) sees rate limits and concurrency limits
// alike. It runs on the goroutine of the request concerned, so it must be
// quick; it must not retain ctx.
type Observer func(ctx context.Context, e Event)

// Event describes one thing a limit did to an Observer. It is passed by
// value and holds no pointers into the limiter, so observing costs no
// allocation.
type Event struct {
	Kind Kind
	// Key and Decision are those of the reported (most restrictive)
	// request; for the lease kinds, Decision.Policy names the leased
	// policy. A concurrency limit's events have no Decision.Policy:
	// LimitName names the limit instead.
	Key      string
	Decision Decision
	// Err is the store's error when Kind is StoreFailed: a fallback store
	// decided instead, or the failure mode did. If the fallback failed too,
	// Err joins both errors. For Shed, it says why the request was not
	// served: the *backpressure.ShedError its caller was answered with, or
	// the request context's error when the caller gave up waiting.
	Err error
	// Latency is the time the store took to answer, zero under
	// WithoutLatency; for Waited and Shed, the time the request waited in
	// the queue; for LimitChanged, the baseline the limit's controller
	// judges latency against (zero if it has none, as a static limit).
	Latency time.Duration
	// Units is the number of units a lease took or gave back; for
	// LimitChanged, the new limit.
	Units int64
	// Cause is, for LimitChanged, why the limit moved: a controller's
	// cause, e.g. "queueing", "drops", "grew", "probing", "probed" (empty
	// from a controller that says nothing). A limit falling on "queueing"
	// while the baseline holds is a spiral starting.
	Cause string
	// LimitName and Class are set on a concurrency limit's events: the
	// name it reports under (backpressure.Config.Name), which metrics and
	// logs show where a rate limit's policy name goes, and the request's
	// class (Default for LimitChanged).
	LimitName string
	Class     Class
}

// Kind classifies an Event.
type Kind uint8

// Kinds of events.
const (
	Allowed     Kind = iota // granted with room to spare
	NearLimit               // granted, with Remaining at or under the near-limit fraction of Limit
	Denied                  // refused by a policy
	StoreFailed             // the store failed; Decision is the failure mode's (or the fallback's)

	// Work a store does beyond a decision, reported by stores that keep
	// local budgets (a store with a method Observe(Observer), which a
	// Limiter built with an Observer calls): Key and Units say what,
	// Decision is the shared store's answer when there is one.
	LeaseTaken    // units leased from the shared state, to be spent locally
	LeaseReturned // unspent units given back
	LeaseFailed   // leasing or giving back failed (Err); the units held stay held

	// A request's wait in a queue, reported by Limiter.TakeTurn for a
	// LeakyQueue policy's turn (Key and Decision are the request's) and by
	// a concurrency limit for a slot (LimitName and Class say which).
	Queued       // the request waits: for its turn (Decision.Delay), or for a slot
	Waited       // the request's wait is over, after Latency: it is served
	Shed         // the request is not served, at once or after waiting Latency (Err says why)
	LimitChanged // a concurrency limit moved to Units
)

var kindNames = [...]string{"allowed", "near-limit", "denied", "store-failed", "lease-taken", "lease-returned", "lease-failed",
	"queued", "waited", "shed", "limit-changed"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Class is how much a request matters when a concurrency limit is
// saturated. Package backpressure, which acts on it, names the classes:
// Default (the zero value, so that requests nobody classified are
// Default), Critical and Sheddable.
type Class uint8

var classNames = [...]string{"default", "critical", "sheddable"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// Observers returns an Observer that hands every event to each of os in
// turn, so that one limiter can feed several (metrics and logs, say): a
// limiter takes one. Nil observers are skipped; with none left, Observers
// returns nil, which a limiter takes as no observer at all.
func Observers(os ...Observer) Observer {
	var all []Observer
	for _, o := range os {
		if o != nil {
			all = append(all, o)
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return func(ctx context.Context, e Event) {
		for _, o := range all {
			o(ctx, e)
		}
	}
}

// observable is a store that does work of its own worth observing
// (leasing local budgets): a Limiter built with an Observer hands it to
// the store, which reports to every observer handed to it.
type observable interface {
	Observe(Observer)
}
