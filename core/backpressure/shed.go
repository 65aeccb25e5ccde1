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
	// RetryAfter estimates when the backlog now in flight and waiting will
	// have drained, between Config.MinRetryAfter and a minute. It is a
	// suggestion, not a promise: a request retried then may be shed again.
	RetryAfter time.Duration

	err error // the context's error, for a request whose deadline passed
}

func (e *ShedError) Error() string {
	return "backpressure: " + e.Class.String() + " request shed: " + e.Reason.String()
}

// Is makes errors.Is(err, ErrShed) true for shed errors.
func (e *ShedError) Is(target error) bool { return target == ErrShed }

// Unwrap returns context.DeadlineExceeded for a request shed because its
// deadline passed, nil otherwise.
func (e *ShedError) Unwrap() error { return e.err }
