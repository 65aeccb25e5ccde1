package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// SharedStore is a Store a fleet shares (Redis) that keeps an in-process
// store to decide on while it cannot be reached. A Limiter on it given no
// failure mode (WithFailOpen, WithFailClosed, WithFallback) decides on Local
// while it fails, applying each whole limit there: never unlimited, and a
// fleet of n instances admits at most n limits in all until it is back.
type SharedStore interface {
	Store
	// Local returns the in-process store, which lives as long as the
	// SharedStore (its Close closes both).
	Local() Store
}

// ownLocal stands for the store's own Local store in WithFallback(nil, n),
// until NewLimiter knows the store.
var ownLocal Store = (*localMarker)(nil)

type localMarker struct{ Store }

// defaultFallback completes the failure policy once the options are in: a
// fallback of nil is the store's Local one; with no failure mode chosen, a
// SharedStore's Local store decides on the whole limit.
func (l *Limiter) defaultFallback() error {
	shared, ok := l.store.(SharedStore)
	switch {
	case l.fallback == ownLocal && !ok:
		return fmt.Errorf("sluice: WithFallback(nil, %d) needs a store with a Local store of its own (a SharedStore), and %T is none", l.share, l.store)
	case l.fallback == ownLocal:
		l.fallback, l.ownLocal = shared.Local(), true
	case l.fallback == nil && ok && !l.failOpen && !l.failClosed:
		l.fallback, l.ownLocal, l.share = shared.Local(), true, 1
	}
	if l.fallback != nil && l.fallback == l.store {
		return errors.New("sluice: the fallback store is the store itself")
	}
	return nil
}

// warnInterval is the least time between two log lines of a Limiter whose
// store fails.
const warnInterval = time.Minute

// warn logs a store failure at WARN through slog.Default, at most once per
// warnInterval, saying what decides instead, whether or not an Observer
// sees the failure: degrading is never silent.
func (l *Limiter) warn(ctx context.Context, err error) {
	now := l.clock.Now().UnixNano()
	last := l.warned.Load()
	if last != 0 && now-last < int64(warnInterval) || !l.warned.CompareAndSwap(last, now) {
		return
	}
	slog.Default().LogAttrs(ctx, slog.LevelWarn, "sluice: the rate limiter's store failed; "+l.mode(),
		slog.String("error", err.Error()), slog.Duration("next_report_within", warnInterval))
}

// mode says what decides while the store fails.
func (l *Limiter) mode() string {
	var s string
	switch {
	case l.fallback != nil && l.share == 1:
		s = "each instance enforces every whole limit in process until it is back"
	case l.fallback != nil:
		s = fmt.Sprintf("each instance enforces 1/%d of every limit in process until it is back", l.share)
	case l.failOpen:
		return "admitting every request, unlimited, until it is back (WithFailOpen)"
	default:
		return "denying every request (503) until it is back (fail closed)"
	}
	if l.failOpen {
		return s + " (unlimited if the fallback fails too: WithFailOpen)"
	}
	return s
}
