package backpressure

import "fmt"

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
	// WaitTimeout: the request waited Config.MaxWait without a slot.
	WaitTimeout
	// Canceled: the request's context ended while it waited.
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
