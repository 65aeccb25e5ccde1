package backpressure

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Config configures a Limiter.
type Config struct {
	// Name names the limit in the events its Observer sees
	// (core.Event.LimitName), where a rate limit's policy name goes.
	Name string
	// Controller sets the global limit: Static(n), NewAIMD or NewGradient.
	// Nil means no global limit, for a Limiter that limits per key only.
	Controller Controller
	// PerKey is the most requests in flight for one key (0: no per-key
	// limit, and Acquire ignores its key). A key waits in the queue like
	// any request, but never has more waiting than PerKey.
	PerKey int
	// MaxKeys bounds the keys tracked at once (default 65,536). Only keys
	// with requests in flight or waiting are tracked, and keys are stored
	// as 64-bit hashes, so memory stays bounded whatever keys clients
	// send; a request for a new key while MaxKeys are busy is shed.
	MaxKeys int
	// Queue is the most requests that may wait for a slot, all classes
	// together (0: none wait, a request is admitted or shed at once).
	Queue int
	// MaxWait is the longest a request waits in the queue before it is
	// shed. Required with a Queue.
	MaxWait time.Duration
	// Headroom keeps fractions of the global limit from the lower classes.
	Headroom Headroom
	// MaxLatency is the latency past which a request that succeeded counts
	// as dropped for the algorithm: the guardrail that makes AIMD back off,
	// and Gradient too, whatever its baseline says (0: none).
	MaxLatency time.Duration
	// MinRetryAfter is the least RetryAfter a ShedError suggests (default
	// 1s, HTTP's smallest Retry-After).
	MinRetryAfter time.Duration
	// Clock is the Limiter's only access to time (default
	// core.SystemClock): latencies, queue waits and the controllers'
	// windows all run on it.
	Clock core.Clock
	// Observer sees requests queued, admitted after a wait (Waited), shed
	// (Err: the *ShedError, or the context's error if it was canceled while
	// waiting) and changes of the limit (Limit, Cause, Baseline), each with
	// LimitName and Class. It runs outside the Limiter's lock, on the
	// goroutine of the request concerned, so it may call the Limiter.
	Observer core.Observer
}

// Limits on Config values.
const (
	maxKeysCap  = 1 << 24
	maxQueueCap = 1 << 20
)

// maxRetryAfter bounds RetryAfter: past a minute, a client is better off
// trying again than trusting an estimate from a backlog that old.
const maxRetryAfter = time.Minute

// New returns a Limiter, or an error naming the setting at fault.
func New(c Config) (*Limiter, error) {
	if c.MaxKeys == 0 {
		c.MaxKeys = 1 << 16
	}
	if c.MinRetryAfter == 0 {
		c.MinRetryAfter = time.Second
	}
	if c.Clock == nil {
		c.Clock = core.SystemClock{}
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	l := &Limiter{
		ctl:        c.Controller,
		seed:       maphash.MakeSeed(),
		perKey:     c.PerKey,
		maxKeys:    c.MaxKeys,
		queueCap:   c.Queue,
		maxWait:    c.MaxWait,
		headroom:   c.Headroom,
		maxLatency: c.MaxLatency,
		minRetry:   c.MinRetryAfter,
		clock:      c.Clock,
		observe:    c.Observer,
		name:       c.Name,
	}
	if c.PerKey > 0 {
		l.keys = make(map[uint64]*keyEntry)
	}
	l.setLimit(math.MaxInt)
	if c.Controller != nil {
		l.setLimit(c.Controller.Limit())
	}
	if l.observe != nil {
		l.announce()
	}
	return l, nil
}

// check reports the first setting of c at fault, its defaults applied.
func (c *Config) check() error {
	switch {
	case c.Controller == nil && c.PerKey == 0:
		return errors.New("backpressure: no Controller and no PerKey limit: nothing to limit")
	case c.Controller != nil && (c.Controller.Limit() < 1 || c.Controller.Limit() > MaxLimit):
		return fmt.Errorf("backpressure: the controller's limit must be 1 to %d, got %d", MaxLimit, c.Controller.Limit())
	case c.PerKey < 0 || c.PerKey > MaxLimit:
		return fmt.Errorf("backpressure: PerKey must be 0 to %d, got %d", MaxLimit, c.PerKey)
	case c.MaxKeys < 1 || c.MaxKeys > maxKeysCap:
		return fmt.Errorf("backpressure: MaxKeys must be 1 to %d, got %d", maxKeysCap, c.MaxKeys)
	case c.Queue < 0 || c.Queue > maxQueueCap:
		return fmt.Errorf("backpressure: Queue must be 0 to %d, got %d", maxQueueCap, c.Queue)
	case c.Queue > 0 && c.MaxWait <= 0:
		return fmt.Errorf("backpressure: a Queue needs a positive MaxWait, got %v", c.MaxWait)
	case c.MaxWait < 0:
		return fmt.Errorf("backpressure: MaxWait must not be negative, got %v", c.MaxWait)
	case !(c.Headroom.Critical >= 0 && c.Headroom.Default >= 0 && c.Headroom.Critical+c.Headroom.Default < 1):
		return fmt.Errorf("backpressure: Headroom fractions must be non-negative and sum to less than 1, got %+v", c.Headroom)
	case c.MaxLatency < 0:
		return fmt.Errorf("backpressure: MaxLatency must not be negative, got %v", c.MaxLatency)
	case c.MinRetryAfter < 0 || c.MinRetryAfter > maxRetryAfter:
		return fmt.Errorf("backpressure: MinRetryAfter must be 0 to %v, got %v", maxRetryAfter, c.MinRetryAfter)
	}
	return nil
}
