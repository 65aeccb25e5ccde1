package client

import (
	"cmp"
	"errors"
	"math"
	"sync"
	"time"
)

// ThrottleConfig tunes adaptive throttling, the client-side throttle of
// Google's SRE book: per host, over a rolling Window, an attempt is rejected
// locally with probability max(0, (requests − K·accepts) / (requests + 1)),
// where accepts are answers other than 429, 5xx or a transport error. Zero
// fields take defaults; a value out of its stated range makes
// [WithAdaptiveThrottle] fail.
type ThrottleConfig struct {
	// K is how many requests are sent per one accepted: at least 1,
	// default 2 (the book's; lower is more aggressive).
	K float64
	// Window is how far back requests and accepts are counted, kept in 10
	// buckets: at least 10ns, default 1s.
	Window time.Duration
	// MaxHosts bounds the hosts tracked. Default 1024; not negative.
	MaxHosts int
}

// Defaults of ThrottleConfig.
const (
	DefaultThrottleK      = 2.0
	DefaultThrottleWindow = time.Second
)

// throttleBuckets is how many buckets a window is kept in.
const throttleBuckets = 10

// ErrThrottled is wrapped by the [*PaceError] of a request the adaptive
// throttle rejected (see [ThrottleConfig]).
var ErrThrottled = errors.New("client: throttled locally: the host refuses much of its traffic")

func (c ThrottleConfig) validate() error {
	var errs []error
	if !(c.K == 0 || c.K >= 1 && !math.IsInf(c.K, 1)) { // NaN too
		errs = append(errs, invalid("ThrottleConfig.K %v is less than 1", c.K))
	}
	if c.Window < 0 || c.Window > 0 && c.Window < throttleBuckets {
		errs = append(errs, invalid("ThrottleConfig.Window %v is negative or shorter than 10ns", c.Window))
	}
	if c.MaxHosts < 0 {
		errs = append(errs, invalid("ThrottleConfig.MaxHosts %d is negative", c.MaxHosts))
	}
	return errors.Join(errs...)
}

func (c ThrottleConfig) withDefaults() ThrottleConfig {
	c.K = cmp.Or(c.K, DefaultThrottleK)
	c.Window = cmp.Or(c.Window, DefaultThrottleWindow)
	c.MaxHosts = cmp.Or(c.MaxHosts, DefaultMaxHosts)
	return c
}

// WithAdaptiveThrottle turns on adaptive throttling (off by default). It
// is one of the checks of an attempt's single per-host decision: the
// breaker first, then this throttle, then pacing; a retry must also fit
// the retry budget and wait for any Retry-After.
func WithAdaptiveThrottle(cfg ThrottleConfig) Option {
	return func(c *config) error {
		if err := cfg.validate(); err != nil {
			return err
		}
		c.throttle, c.throttleOn = cfg, true
		return nil
	}
}

// throttle holds the adaptive throttle's counts per host.
type throttle struct {
	cfg   ThrottleConfig
	mu    sync.Mutex
	hosts *hostTable[*rollingWindow]
}

func newThrottle(cfg ThrottleConfig) *throttle {
	return &throttle{cfg: cfg, hosts: newHostTable(cfg.MaxHosts, func(w *rollingWindow, at time.Time) bool {
		calls, _ := w.totals(at)
		return calls == 0
	})}
}

// window returns host's counts; in them a "call" is a request, answered or
// rejected locally, and a "fail" one the host did not accept.
func (t *throttle) window(host string, now time.Time) *rollingWindow {
	return t.hosts.get(host, now, func() *rollingWindow {
		w := new(rollingWindow)
		w.init(t.cfg.Window, throttleBuckets, now)
		return w
	})
}

// reject reports whether a request to host at now is rejected locally, u
// being a uniform draw in [0, 1), and counts it if so. A request let
// through is counted once answered (see answered): counting it at once
// would count every request in flight as refused, and a client starting
// with many requests at once would reject most of them.
func (t *throttle) reject(host string, now time.Time, u float64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.hosts.lookup(host, now)
	if !ok {
		return false // nothing answered yet
	}
	calls, fails := w.totals(now)
	p := max(0, (float64(calls)-t.cfg.K*float64(calls-fails))/float64(calls+1))
	if u >= p {
		return false
	}
	w.add(now, true)
	return true
}

// answered counts a request to host answered at now, accepted or not.
func (t *throttle) answered(host string, now time.Time, accepted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.window(host, now).add(now, !accepted)
}

// acceptedRate returns the rate host accepted requests at over the window,
// when the throttle rejects some of them.
func (t *throttle) acceptedRate(host string, now time.Time) (float64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.hosts.lookup(host, now)
	if !ok {
		return 0, false
	}
	calls, fails := w.totals(now)
	accepts := float64(calls - fails)
	if float64(calls) <= t.cfg.K*accepts {
		return 0, false
	}
	return accepts / t.cfg.Window.Seconds(), true
}
