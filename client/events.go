package client

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Hooks observe a [Transport]. They are called synchronously from the
// goroutine making the request, so they must be quick and safe for
// concurrent use. Breaker state changes are reported by
// BreakerConfig.OnStateChange (see [WithBreaker]).
type Hooks struct {
	// OnRetry is called before the wait that precedes each retry.
	OnRetry func(RetryEvent)
	// OnGiveUp is called when a request that may be retried (idempotent,
	// replayable body) stops after a retryable failure, with the reason.
	OnGiveUp func(GiveUpEvent)
	// OnPace is called before each pacing wait.
	OnPace func(PaceEvent)
}

// RetryEvent describes a retry about to happen.
type RetryEvent struct {
	Request    *http.Request
	Attempt    int           // the attempt that failed, from 1
	Reason     string        // "429 Too Many Requests", "timeout", "connection reset", ...
	StatusCode int           // 0 when the attempt got no response
	Err        error         // the transport error, nil when there was a response
	RetryAfter time.Duration // what the server asked for, 0 if nothing
	Delay      time.Duration // the wait before the next attempt
}

// GiveUpEvent describes why retries stopped.
type GiveUpEvent struct {
	Request    *http.Request
	Attempt    int    // attempts made
	Reason     string // of the last failure, as in RetryEvent
	StatusCode int
	Err        error
	Cause      error // ErrMaxAttempts, ErrRetryBudget, ErrDeadline, ErrRetryAfterTooLong, ErrCircuitOpen, or a body replay error
}

// PaceEvent describes a wait imposed by pacing.
type PaceEvent struct {
	Request *http.Request
	Host    string
	Reason  PaceReason // what imposed the wait
	// Policy, Remaining and Reset describe the quota that imposed a
	// PaceQuota wait: the policy's name ("" for the unnamed forms), the
	// units left in it as far as the transport knows, and the time until
	// they come back.
	Policy    string
	Remaining int64
	Reset     time.Duration
	// Rate is the rate, in requests per second, that the wait spaces
	// requests at: a policy's sustained rate, its units left over the time
	// left, or the learned rate; 0 for a wait for a reset or a
	// Retry-After.
	Rate  float64
	Delay time.Duration
}

// Reasons retries stop, wrapped by [RetryError] and reported in [GiveUpEvent].
var (
	ErrMaxAttempts       = errors.New("client: max attempts reached")
	ErrRetryBudget       = errors.New("client: retry budget exhausted")
	ErrDeadline          = errors.New("client: retry would cross the deadline")
	ErrRetryAfterTooLong = errors.New("client: Retry-After beyond the cap")
)

// ErrPaceTooLong is wrapped by the [*PaceError] of a request that pacing
// would have held longer than PacingConfig.MaxDelay, or past its deadline.
var ErrPaceTooLong = errors.New("client: paced wait too long")

// PaceError is returned, before anything is sent, for a request whose
// paced wait would last beyond PacingConfig.MaxDelay, cross its deadline,
// or hold it behind more requests than the host's policy lets go at once:
// the host would only have answered it 429. Wait says when the
// host is expected to accept one more request, the Retry-After a service
// passing the failure on may give its own callers. It matches
// [ErrPaceTooLong].
type PaceError struct {
	Host   string
	Reason PaceReason // what imposed the wait
	Policy string     // the quota's name, for PaceQuota
	Wait   time.Duration
}

// Error describes the refusal.
func (e *PaceError) Error() string {
	if e.Reason == PaceThrottled {
		return fmt.Sprintf("client: %s: throttled locally", e.Host)
	}
	return fmt.Sprintf("client: %s: paced wait of %v for %s: too long", e.Host, e.Wait, e.Reason)
}

// Unwrap returns ErrThrottled for a request the adaptive throttle
// rejected, ErrPaceTooLong otherwise.
func (e *PaceError) Unwrap() error {
	if e.Reason == PaceThrottled {
		return ErrThrottled
	}
	return ErrPaceTooLong
}

// RetryError is returned when retries stop after a transport error. It
// matches (errors.Is / errors.As) both Reason and the last error.
type RetryError struct {
	Attempts int   // attempts made
	Reason   error // why retries stopped: ErrMaxAttempts, ErrRetryBudget, ...
	Err      error // the last attempt's error
}

// Error describes the failure.
func (e *RetryError) Error() string {
	return fmt.Sprintf("client: giving up after %d attempt(s): %v: %v", e.Attempts, e.Reason, e.Err)
}

// Unwrap returns Reason and Err.
func (e *RetryError) Unwrap() []error { return []error{e.Reason, e.Err} }
