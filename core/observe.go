package core

import (
	"context"
	"fmt"
	"time"
)

// Observer sees what the limits do: a Limiter's decisions and queue waits, a
// store's leases, and a concurrency limit's waits, sheds and limit changes
// (package backpressure). It runs on the goroutine of the request
// concerned, so it must be quick, and it must not retain ctx.
type Observer func(ctx context.Context, e Event)

// Event describes one thing a limit did, to an Observer. It is a plain
// value; each field has one meaning whatever the Kind, and is zero where a
// kind has nothing to say.
type Event struct {
	Kind Kind
	// Key is the limited key: the reported (most restrictive) request's,
	// or a concurrency limit's per-key key.
	Key string
	// Decision is the decision reported: the rate limit's, or the failure
	// mode's. For the lease kinds, Decision.Policy names the leased policy.
	Decision Decision
	// Err says what went wrong: the store's error (StoreFailed, where the
	// fallback or the failure mode decided instead; LeaseFailed), why a
	// request was not served (Shed: a *backpressure.ShedError, or the
	// request context's error when its caller gave up), or what moved a
	// dependency's limit (LimitChanged from a dependency link).
	Err error
	// Latency is the time the store took to answer a decision; zero under
	// WithoutLatency and for kinds that are no store call.
	Latency time.Duration
	// Waited is how long a request waited in a queue (Waited, Shed).
	Waited time.Duration
	// Units is the number of units a lease took or gave back.
	Units int64
	// Limit is the limit in force (LimitChanged: where it moved; Admitted:
	// when the request took its slot): a concurrency limit's slots, or the
	// requests per second a dependency link admits (0 while the dependency
	// accepts nothing).
	Limit int64
	// Baseline is the latency a concurrency limit's controller judges
	// latency against (LimitChanged); zero if it has none.
	Baseline time.Duration
	// Cause is why a limit moved (LimitChanged), in a word or two:
	// "queueing", "drops", "grew", "probing", "quota", "retry-after".
	Cause string
	// LimitName names a concurrency limit or dependency link, where a rate
	// limit's decision names its policy.
	LimitName string
	// Class is the request's class, on a concurrency limit's events.
	Class Class
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
	Waited       // the request's wait is over, after Waited: it is served
	Shed         // the request is not served, at once or after waiting (Err says why)
	LimitChanged // a concurrency limit moved to Limit (Cause says why; "start" announces it)

	// A concurrency limit's slots, so that an observer can count the
	// requests in flight.
	Admitted // the request took a slot at once (one that waited first is Waited)
	Released // a request gave its slot back
)

var kindNames = [...]string{"allowed", "near-limit", "denied", "store-failed", "lease-taken", "lease-returned", "lease-failed",
	"queued", "waited", "shed", "limit-changed", "admitted", "released"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Class is how much a request matters when a concurrency limit is
// saturated: the lowest class is shed first.
type Class uint8

// Classes, from the one shed last to the one shed first.
const (
	// Default is the class of ordinary traffic, and the zero Class, so
	// that requests nobody classified are Default.
	Default Class = iota
	// Critical traffic is admitted first, may use the part of a limit
	// that backpressure.Headroom keeps, and is shed last: health checks,
	// payments, requests a user is waiting on.
	Critical
	// Sheddable traffic is shed first: prefetches, batch jobs, retries that
	// can wait.
	Sheddable
)

var classNames = [...]string{"default", "critical", "sheddable"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// Outcome is how a call went, as its caller reports it to a concurrency
// limit (backpressure.Permit.Done) or a circuit breaker
// (client.BreakerPermit.Done).
type Outcome uint8

// Outcomes.
const (
	// Succeeded: the call completed; its latency says how loaded the
	// service is.
	Succeeded Outcome = iota
	// Failed: the call failed in a way that says the service is unwell or
	// overloaded (a timeout, a 5xx, a 503 from a dependency): adaptive
	// limits back off and breakers count a failure.
	Failed
	// Ignored: the call says nothing about the service (it failed on bad
	// input, its caller went away, it panicked): nothing is learned.
	Ignored
)

var outcomeNames = [...]string{"succeeded", "failed", "ignored"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Observers returns an Observer that hands every event to each of os in
// turn. Nil observers are skipped; with none left, it returns nil, which a
// limiter takes as no observer at all.
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

// Observable is a Store that does work of its own worth observing (leases):
// NewLimiter hands it the Limiter's Observer, and the store reports that
// work to every Observer handed to it.
type Observable interface {
	Observe(Observer)
}
