package sluiceslog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core"
)

// New returns an observer logging to logger (slog.Default() if nil): give it
// to a Limiter with core.WithObserver, alone or with others (core.Observers).
func New(logger *slog.Logger, opts ...Option) (core.Observer, error) {
	if logger == nil {
		logger = slog.Default()
	}
	o := &observer{logger: logger, clock: core.SystemClock{}, lines: 5, per: 10 * time.Second}
	o.levels[core.Denied] = slog.LevelDebug
	o.levels[core.StoreFailed] = slog.LevelWarn
	o.levels[core.LeaseFailed] = slog.LevelWarn
	o.levels[core.Shed] = slog.LevelWarn
	o.levels[core.LimitChanged] = slog.LevelDebug
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	for i, l := range o.levels {
		if l != nil {
			o.kinds[i] = &kind{level: l}
		}
	}
	return o.observe, nil
}

// Option configures the observer New returns.
type Option func(*observer) error

// WithLevel logs events of outcome at level, or not at all if level is nil.
// The defaults: Denied and LimitChanged at Debug, StoreFailed, LeaseFailed
// and Shed at Warn, the others not at all. A *slog.LevelVar changes the
// level while the program runs.
func WithLevel(outcome core.Kind, level slog.Leveler) Option {
	return func(o *observer) error {
		if int(outcome) >= len(o.levels) {
			return fmt.Errorf("sluiceslog: outcome %v out of range", outcome)
		}
		o.levels[outcome] = level
		return nil
	}
}

// WithLimit logs at most lines lines per interval for each outcome (default
// 5 per 10 seconds); the next event after the interval, of any kind, brings
// one line saying how many were suppressed.
func WithLimit(lines int, interval time.Duration) Option {
	return func(o *observer) error {
		if lines < 1 {
			return fmt.Errorf("sluiceslog: at least one line per interval, got %d", lines)
		}
		if interval <= 0 {
			return fmt.Errorf("sluiceslog: interval must be positive, got %v", interval)
		}
		o.lines, o.per = lines, interval
		return nil
	}
}

// WithKey puts the limited key in each line, as "key"; it is left out by
// default because keys are often personal data or secrets.
func WithKey() Option {
	return func(o *observer) error { o.withKey = true; return nil }
}

// WithClock sets the clock that intervals are measured on (default
// core.SystemClock).
func WithClock(c core.Clock) Option {
	return func(o *observer) error {
		if c == nil {
			return errors.New("sluiceslog: nil clock")
		}
		o.clock = c
		return nil
	}
}

// maxOutcomes bounds the outcomes the observer can log, with room for
// outcomes core adds later.
const maxOutcomes = 32

type observer struct {
	logger  *slog.Logger
	clock   core.Clock
	lines   int
	per     time.Duration
	withKey bool
	levels  [maxOutcomes]slog.Leveler
	kinds   [maxOutcomes]*kind // nil: not logged

	// flushAt is when the earliest interval holding suppressed lines ends,
	// in Unix nanoseconds, or 0 if none does: every event checks it, so
	// that the count of lines suppressed comes out even when no more
	// events of their kind do.
	flushAt atomic.Int64
	flushMu sync.Mutex
}

// kind is the budget of lines of one outcome.
type kind struct {
	level      slog.Leveler
	mu         sync.Mutex
	start      time.Time // of the interval; zero before the first line
	lines      int       // logged in the interval
	suppressed int64     // in the interval
}

func (o *observer) observe(ctx context.Context, e core.Event) {
	if at := o.flushAt.Load(); at != 0 {
		o.flush(ctx, at)
	}
	if int(e.Kind) >= len(o.kinds) {
		return
	}
	k := o.kinds[e.Kind]
	if k == nil {
		return
	}
	level := k.level.Level()
	if !o.logger.Enabled(ctx, level) {
		return
	}
	now := o.clock.Now()
	k.mu.Lock()
	var before int64 // lines suppressed in the interval just over
	if k.start.IsZero() || now.Sub(k.start) >= o.per || now.Before(k.start) {
		before = k.suppressed
		k.start, k.lines, k.suppressed = now, 0, 0
	}
	log := k.lines < o.lines
	if log {
		k.lines++
	} else {
		k.suppressed++
	}
	end := k.start.Add(o.per)
	first := k.suppressed == 1
	k.mu.Unlock()

	if before > 0 {
		o.summarize(ctx, e.Kind, level, before)
	}
	if log {
		o.log(ctx, level, e)
	} else if first {
		o.schedule(end.UnixNano())
	}
}

// log writes the line of e.
func (o *observer) log(ctx context.Context, level slog.Level, e core.Event) {
	var buf [8]slog.Attr
	attrs := buf[:0]
	if p := e.Decision.Policy; p != nil {
		attrs = append(attrs, slog.String("policy", p.Name()))
	} else if e.LimitName != "" { // a concurrency limit's
		attrs = append(attrs, slog.String("policy", e.LimitName))
	}
	if o.withKey {
		attrs = append(attrs, slog.String("key", e.Key))
	}
	if e.LimitName != "" && e.Kind != core.LimitChanged { // a concurrency limit's request
		attrs = append(attrs, slog.String("class", e.Class.String()))
	}
	var msg string
	switch e.Kind {
	case core.Allowed:
		msg = "sluice: request allowed"
		attrs = append(attrs, slog.Int64("remaining", e.Decision.Remaining))
	case core.NearLimit:
		msg = "sluice: request near its limit"
		attrs = append(attrs, slog.Int64("remaining", e.Decision.Remaining), slog.Int64("limit", e.Decision.Limit))
	case core.Denied:
		msg = "sluice: request denied"
		if e.Decision.Impossible {
			attrs = append(attrs, slog.Bool("impossible", true))
		} else {
			attrs = append(attrs, slog.Duration("retry_after", e.Decision.RetryAfter))
		}
	case core.StoreFailed:
		msg = "sluice: store failed"
		decidedBy := "failure mode"
		if e.Decision.Limit > 0 {
			decidedBy = "fallback"
		}
		attrs = append(attrs, slog.Any("error", e.Err), slog.Bool("allowed", e.Decision.Allowed), slog.String("decided_by", decidedBy))
		if e.Latency > 0 {
			attrs = append(attrs, slog.Duration("latency", e.Latency))
		}
	case core.LeaseTaken:
		msg = "sluice: lease taken"
		attrs = append(attrs, slog.Int64("units", e.Units))
	case core.LeaseReturned:
		msg = "sluice: lease returned"
		attrs = append(attrs, slog.Int64("units", e.Units))
	case core.LeaseFailed:
		msg = "sluice: lease failed"
		attrs = append(attrs, slog.Any("error", e.Err), slog.Int64("units", e.Units))
	case core.Queued:
		msg = "sluice: request queued"
		if e.Decision.Delay > 0 {
			attrs = append(attrs, slog.Duration("turn_in", e.Decision.Delay))
		}
	case core.Waited:
		msg = "sluice: request waited"
		attrs = append(attrs, slog.Duration("waited", e.Waited))
	case core.Shed:
		msg = "sluice: request shed"
		attrs = append(attrs, slog.Any("error", e.Err))
		if e.Waited > 0 {
			attrs = append(attrs, slog.Duration("waited", e.Waited))
		}
	case core.LimitChanged:
		msg = "sluice: concurrency limit changed"
		attrs = appendLimitChanged(attrs, e)
	default:
		msg = "sluice: " + e.Kind.String()
		if e.Err != nil {
			attrs = append(attrs, slog.Any("error", e.Err))
		}
	}
	o.logger.LogAttrs(ctx, level, msg, attrs...)
}

// appendLimitChanged appends a limit change's attributes: the new limit,
// why it moved and the baseline the controller judged latency against (when
// it says), so that a limit falling on "queueing" while its baseline holds
// reads as the spiral it is.
func appendLimitChanged(attrs []slog.Attr, e core.Event) []slog.Attr {
	attrs = append(attrs, slog.Int64("limit", e.Limit))
	if e.Cause != "" {
		attrs = append(attrs, slog.String("cause", e.Cause))
	}
	if e.Baseline > 0 {
		attrs = append(attrs, slog.Duration("baseline", e.Baseline))
	}
	return attrs
}

// summarize writes the line counting the lines of outcome suppressed in an
// interval.
func (o *observer) summarize(ctx context.Context, outcome core.Kind, level slog.Level, n int64) {
	o.logger.LogAttrs(ctx, level, "sluice: log lines suppressed",
		slog.String("outcome", outcome.String()), slog.Int64("suppressed", n), slog.Duration("interval", o.per))
}

// schedule has the next event flush the suppressed lines of intervals
// ending at or before at (Unix nanoseconds).
func (o *observer) schedule(at int64) {
	if at == 0 {
		at = 1
	}
	for {
		cur := o.flushAt.Load()
		if cur != 0 && cur <= at {
			return
		}
		if o.flushAt.CompareAndSwap(cur, at) {
			return
		}
	}
}

// flush writes the summaries of intervals over by now, if the earliest,
// ending at at, is.
func (o *observer) flush(ctx context.Context, at int64) {
	now := o.clock.Now()
	if now.UnixNano() < at || !o.flushMu.TryLock() {
		return // not yet, or another event is at it
	}
	defer o.flushMu.Unlock()
	o.flushAt.Store(0)
	next := int64(math.MaxInt64)
	for i, k := range o.kinds {
		if k == nil {
			continue
		}
		k.mu.Lock()
		var n int64
		if k.suppressed > 0 {
			if end := k.start.Add(o.per); now.Before(end) && !now.Before(k.start) {
				next = min(next, end.UnixNano())
			} else {
				n = k.suppressed
				k.start, k.lines, k.suppressed = time.Time{}, 0, 0
			}
		}
		k.mu.Unlock()
		if n > 0 {
			o.summarize(ctx, core.Kind(i), k.level.Level(), n)
		}
	}
	if next != math.MaxInt64 {
		o.schedule(next)
	}
}
