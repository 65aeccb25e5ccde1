package sluiceotel

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// Attribute keys.
const (
	policyKey    = attribute.Key("sluice.rate_limiting.policy")
	resultKey    = attribute.Key("sluice.rate_limiting.result")
	nearLimitKey = attribute.Key("sluice.rate_limiting.near_limit")
	degradedKey  = attribute.Key("sluice.rate_limiting.degraded")
	keyKey       = attribute.Key("sluice.rate_limiting.key")
	reasonKey    = attribute.Key("sluice.rate_limiting.reason")
	classKey     = attribute.Key("sluice.rate_limiting.class")
	operationKey = attribute.Key("sluice.rate_limiting.store.operation")
	errorTypeKey = attribute.Key("error.type")
)

// result is a request's sluice.rate_limiting.result.
type result uint8

const (
	resultAllowed result = iota
	resultNearLimit
	resultDenied
	resultDegradedAllowed
	resultDegradedDenied
)

// resultNames are each result's sluice.rate_limiting.result, acquired or
// rejected as ASP.NET Core's aspnetcore.rate_limiting.result has it; how
// close to the limit, and whether the store decided, are attributes of
// their own (near_limit, degraded), so that a panel of the requests
// admitted is the sum over result="acquired".
var resultNames = [...]string{"acquired", "acquired", "rejected", "acquired", "rejected"}

// results lists every result, for the series started at zero.
var results = [...]result{resultAllowed, resultNearLimit, resultDenied, resultDegradedAllowed, resultDegradedDenied}

func resultOf(o core.Kind, d core.Decision) result {
	switch o {
	case core.NearLimit:
		return resultNearLimit
	case core.Denied:
		return resultDenied
	case core.StoreFailed:
		if d.Allowed {
			return resultDegradedAllowed
		}
		return resultDegradedDenied
	}
	return resultAllowed
}

// operation is a failed store call's sluice.rate_limiting.store.operation.
type operation uint8

const (
	opTake   operation = iota // a decision
	opAdjust                  // settling a reservation
	opLease                   // taking or giving back a lease
)

var operationNames = [...]string{"take", "adjust", "lease"}

// errorType is a failure's error.type.
type errorType uint8

const (
	errOther errorType = iota
	errTimeout
	errCanceled
)

var errorTypeNames = [...]string{"_OTHER", "timeout", "canceled"}

// reason is why a backpressure limiter shed a request, or, for the end of
// a wait in its queue, 0: the request got its turn.
type reason uint8

// reasonNames follow backpressure.Reason's values, in attribute style.
var reasonNames = [...]string{"acquired", "saturated", "key_saturated", "queue_full", "displaced", "wait_timeout", "canceled", "too_many_keys", "_OTHER"}

// reasonOther is the reason of a reason unknown.
const reasonOther = reason(len(reasonNames) - 1)

func reasonOf(r backpressure.Reason) reason {
	if int(r) < len(reasonNames)-1 {
		return reason(r)
	}
	return reasonOther
}

// class is a request's class under a concurrency limit (core.Event.Class),
// or classNone for a request that has none (a LeakyQueue policy's), whose
// sets leave the attribute out.
type class uint8

const (
	classDefault class = iota
	classCritical
	classSheddable
	classOther
	classNone
)

// classNames follow core.Class's names; classNone's is never
// written.
var classNames = [...]string{"default", "critical", "sheddable", "_OTHER", ""}

func classOf(c core.Class) class {
	switch c {
	case core.Default:
		return classDefault
	case core.Critical:
		return classCritical
	case core.Sheddable:
		return classSheddable
	}
	return classOther
}

// slot names one attribute set of a policy's (or a concurrency limit's)
// events, less the policy.
type slot struct {
	kind   kind
	result result    // kindRequest
	op     operation // kindFailure
	err    errorType // kindFailure, kindFailedCall
	reason reason    // kindQueue, kindShed
	class  class     // kindQueue, kindShed (classNone: no class)
}

type kind uint8

const (
	kindPolicy     kind = iota // the policy alone
	kindRequest                // + result
	kindFailedCall             // + error.type
	kindFailure                // + operation, error.type
	kindQueue                  // + result (how a wait in a queue ended), class
	kindShed                   // + reason, class
)

// attributes returns s's attributes for the policy (or limiter) named name,
// which is left out if empty.
func (s slot) attributes(name string) []attribute.KeyValue {
	kvs := make([]attribute.KeyValue, 0, 5) // room for a key
	if name != "" {
		kvs = append(kvs, policyKey.String(name))
	}
	switch s.kind {
	case kindRequest:
		kvs = append(kvs, resultKey.String(resultNames[s.result]),
			nearLimitKey.Bool(s.result == resultNearLimit),
			degradedKey.Bool(s.result == resultDegradedAllowed || s.result == resultDegradedDenied))
	case kindFailedCall:
		kvs = append(kvs, errorTypeKey.String(errorTypeNames[s.err]))
	case kindFailure:
		kvs = append(kvs, operationKey.String(operationNames[s.op]), errorTypeKey.String(errorTypeNames[s.err]))
	case kindQueue:
		kvs = append(kvs, resultKey.String(reasonNames[s.reason]))
	case kindShed:
		kvs = append(kvs, reasonKey.String(reasonNames[s.reason]))
	}
	if (s.kind == kindQueue || s.kind == kindShed) && s.class != classNone {
		kvs = append(kvs, classKey.String(classNames[s.class]))
	}
	return kvs
}

func policyName(p *core.Policy) string {
	if p == nil {
		return ""
	}
	return p.Name()
}

// set is an attribute set ready to pass to an instrument: the options
// slices are built once, so that recording allocates none.
type set struct {
	add     []metric.AddOption
	record  []metric.RecordOption
	observe []metric.ObserveOption
}

func newSet(kvs []attribute.KeyValue) *set {
	o := metric.WithAttributeSet(attribute.NewSet(kvs...))
	return &set{add: []metric.AddOption{o}, record: []metric.RecordOption{o}, observe: []metric.ObserveOption{o}}
}

// index numbers the slots, for sets to hold them in an array.
func (s slot) index() int {
	const (
		requests    = 1
		failedCalls = requests + len(resultNames)
		failures    = failedCalls + len(errorTypeNames)
		queue       = failures + len(operationNames)*len(errorTypeNames)
		shed        = queue + len(reasonNames)*len(classNames)
	)
	switch s.kind {
	case kindRequest:
		return requests + int(s.result)
	case kindFailedCall:
		return failedCalls + int(s.err)
	case kindFailure:
		return failures + int(s.op)*len(errorTypeNames) + int(s.err)
	case kindQueue:
		return queue + int(s.reason)*len(classNames) + int(s.class)
	case kindShed:
		return shed + int(s.reason)*len(classNames) + int(s.class)
	}
	return 0
}

const nSlots = 1 + len(resultNames) + len(errorTypeNames) + len(operationNames)*len(errorTypeNames) + 2*len(reasonNames)*len(classNames)

// sets holds the attribute sets of one policy (or limiter name), each built
// when first used.
type sets struct {
	name  string
	slots [nSlots]atomic.Pointer[set]
}

func (ss *sets) get(s slot) *set {
	p := &ss.slots[s.index()]
	if v := p.Load(); v != nil {
		return v
	}
	v := newSet(s.attributes(ss.name))
	if p.CompareAndSwap(nil, v) {
		return v
	}
	return p.Load()
}

// maxCached bounds each cache of attribute sets, in policies (or names). A
// program that makes policies on the fly builds each event's sets anew past
// it.
const maxCached = 1024

// cache holds attribute sets by policy (or name).
type cache[K comparable] struct {
	m sync.Map // K -> *sets
	n atomic.Int64
}

// get returns the sets of k, named name.
func (c *cache[K]) get(k K, name string) *sets {
	if v, ok := c.m.Load(k); ok {
		return v.(*sets)
	}
	ss := &sets{name: name}
	if c.n.Load() >= maxCached {
		return ss
	}
	v, loaded := c.m.LoadOrStore(k, ss)
	if !loaded {
		c.n.Add(1)
	}
	return v.(*sets)
}

func (c *cache[K]) len() int { return int(c.n.Load()) }
