package backpressure

import (
	"errors"
	"time"
)

// ErrRejected is matched (errors.Is) by every *Rejection.
var ErrRejected = errors.New("backpressure: request shed")

// Rejection is the error Acquire returns when it sheds a request: the
// service is saturated, and the caller should come back later. HTTP layers
// answer it with 503 Service Unavailable and Retry-After.
type Rejection struct {
	Reason Reason
	Class  Class
	// RetryAfter is when the caller might try again: the time the work now
	// in flight and waiting would take to drain at the current limit and
	// latency (by Little's law, (in flight + waiting) × mean latency ÷
	// limit), and never less than Config.MinRetryAfter. It is a suggestion
	// for clients, not a promise: a request retried then may be shed again.
	RetryAfter time.Duration

	err error // the context's error, for a request whose deadline passed
}

func (r *Rejection) Error() string {
	return "backpressure: " + r.Class.String() + " request shed: " + r.Reason.String()
}

// Is makes errors.Is(err, ErrRejected) true for rejections.
func (r *Rejection) Is(target error) bool { return target == ErrRejected }

// Unwrap returns context.DeadlineExceeded for a request shed because its
// deadline passed, nil otherwise.
func (r *Rejection) Unwrap() error { return r.err }
