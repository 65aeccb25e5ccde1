package backpressure

import (
	"context"
	"fmt"
	"time"
	"github.com/sluice-go/sluice/core"
)

// core.Observer sees what a Limiter does: requests queued, admitted after a
// wait, shed, and changes of the limit. It runs on the goroutine of the
// request concerned (for a limit change, the request whose completion
// changed it), outside the Limiter's lock, so it may call the Limiter; it
// must be quick and must not retain ctx.
type core.Observer func(ctx context.Context, e core.Event)

// core.Event describes one thing a Limiter did. It is passed by value and holds
// no pointers into the Limiter, so observing costs no allocation.
// ReportTo hands events to a core.Observer instead.
type core.Event struct {
	core.Kind core.Kind
	// core.Class and Key are the request's (Key is empty for a limit change,
	// and for a Limiter without a per-key limit).
	core.Class core.Class
	Key   string
	// Reason says why a request was shed (core.Kind core.Shed).
	Reason Reason
	// Wait is how long the request waited (core.Kind core.Waited, and core.Shed after a
	// wait).
	Wait time.Duration
	// OldLimit and NewLimit are the limit before and after (core.Kind
	// core.LimitChanged).
	OldLimit, NewLimit int
	// InFlight and Waiting are the Limiter's counts just after the event.
	InFlight, Waiting int
	// ShedError is the error a shed request's caller gets (core.Kind core.Shed), nil
	// when the request's context ended while it waited.
	ShedError *ShedError
}

// core.Kind classifies an core.Event.
type core.Kind uint8

// Kinds of events.
const (
	core.Queued       core.Kind = iota + 1 // the request found no free slot and waits
	core.Waited                       // the request was admitted after waiting
	core.Shed                         // the request was refused, at once or after waiting
	core.LimitChanged                 // the algorithm moved the limit
)

var kindNames = [...]string{"", "queued", "waited", "shed", "limit-changed"}

func (k core.Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("core.Kind(%d)", uint8(k))
}

// Reason says why a request was shed.
type Reason uint8

// Reasons for shedding.
const (
	// Saturated: no slot for the request's class and no queue to wait in.
	Saturated Reason = iota + 1
	// KeySaturated: the request's key has Config.PerKey requests in flight
	// and no queue to wait in, or as many waiting as in flight.
	KeySaturated
	// QueueFull: the queue holds Config.Queue requests, none of a lower
	// class than this one.
	QueueFull
	// Displaced: the request was waiting when a request of a higher class
	// found the queue full and took its place.
	Displaced
	// WaitTimeout: the request waited Config.MaxWait without a slot, or
	// its context's deadline passed before it had one.
	WaitTimeout
	// Canceled: the request's context was canceled while it waited.
	Canceled
	// TooManyKeys: the per-key table holds Config.MaxKeys busy keys.
	TooManyKeys
)

var reasonNames = [...]string{"", "saturated", "key-saturated", "queue-full", "displaced", "wait-timeout", "canceled", "too-many-keys"}

func (r Reason) String() string {
	if int(r) < len(reasonNames) && r != 0 {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}
