package backpressure

import (
	"errors"
	"time"

	"github.com/sluice-go/sluice/core"
)

// ErrShed is matched (errors.Is) by every *ShedError.
var ErrShed = errors.New("backpressure: request shed")

// ShedError is the error Acquire returns when it sheds a request: the
// service is saturated, and the caller should come back later. HTTP layers
// answer it with 503 Service Unavailable and Retry-After.
type ShedError struct {
	Reason Reason
	Class  core.Class
	// RetryAfter is when the caller might try again: the time the work now
	// in flight and waiting would take to drain at the current limit and
	// latency (by Little's law, (in flight + waiting) × mean latency ÷
	// limit), and never less than Config.MinRetryAfter. It is a suggestion
	// for clients, not a promise: a request retried then may be shed again.
	RetryAfter time.Duration
}

func (e *ShedError) Error() string {
	return "backpressure: " + e.Class.String() + " request shed: " + e.Reason.String()
}

// Is makes errors.Is(err, ErrShed) true for shed errors.
func (e *ShedError) Is(target error) bool { return target == ErrShed }
