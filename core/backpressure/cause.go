package backpressure

import (
	"fmt"
	"time"
)

// Cause says why an adaptive controller last moved its limit; its String is
// core.Event.Cause on a core.LimitChanged event.
type Cause uint8

// Causes of a limit change.
const (
	// Grew: the requests completed without queueing, and the limit was in
	// use: it grows.
	Grew Cause = iota + 1
	// Queueing: latency above the baseline's tolerance says requests queue
	// in the service: the limit shrinks.
	Queueing
	// Drops: requests failed as overloaded (reported core.Failed, or slower
	// than Config.MaxLatency): the limit shrinks.
	Drops
	// Probing: the limit is pinned low while the algorithm measures the
	// service's latency at a low concurrency, its baseline.
	Probing
	// Probed: the baseline is measured (core.Event.Baseline); the limit is
	// back where it was before the probe.
	Probed
)

var causeNames = [...]string{"", "grew", "queueing", "drops", "probing", "probed"}

func (c Cause) String() string {
	if int(c) < len(causeNames) && c != 0 {
		return causeNames[c]
	}
	return fmt.Sprintf("Cause(%d)", uint8(c))
}

// explainer is a Controller that says why it last moved its limit, and the
// baseline it judges latency against (AIMD and Gradient).
type explainer interface {
	Cause() Cause
	Baseline() time.Duration
}

// Baseline returns the latency the Limiter's algorithm judges latency
// against (see Gradient.Baseline and AIMD.Baseline), or zero if it has
// none.
func (l *Limiter) Baseline() time.Duration {
	x, ok := l.ctl.(explainer)
	if !ok {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return x.Baseline()
}
