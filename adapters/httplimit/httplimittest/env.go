package httplimittest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
)

// Env is one test's clock, store and recorded limiter events.
type Env struct {
	Clock *sluicetest.ManualClock // the time of the store
	Store core.Store              // a memory store
	// ItemRoute is a route with a path parameter, "/items/:id" written as
	// the adapter's framework writes it, which the application serves.
	ItemRoute string

	mu     sync.Mutex
	events []core.Event
	held   []backpressure.Permit // slots Hold took
}

// Epoch is the manual clock's start: a whole day, so a boundary of every
// window the table uses (Unix 1893456000).
var Epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// NewEnv returns a manual clock at Epoch and a memory store on it, closed
// when the test ends.
func NewEnv(t *testing.T) *Env {
	clock := sluicetest.NewManualClock(Epoch)
	s, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return &Env{Clock: clock, Store: s}
}

// Limiter returns a limiter on store (Env.Store if nil) that records events.
func (e *Env) Limiter(t *testing.T, store core.Store, opts ...core.Option) *core.Limiter {
	if store == nil {
		store = e.Store
	}
	l, err := core.NewLimiter(store, append(opts, core.WithObserver(e.observe))...)
	require.NoError(t, err)
	return l
}

// SlotsName is the name the concurrency limits of Env.Slots report their
// events under (core.Event.LimitName).
const SlotsName = "slots"

// Slots returns a concurrency limit configured by c, reporting its events
// to the Env's recorder (see Last) under SlotsName, on a clock that reads
// Env.Clock and never runs a wait out: a request waits in its queue until a
// slot frees or its context ends. Its rejections suggest a RetryAfter of
// c.MinRetryAfter (1 s by default) while its requests take no time on
// Env.Clock.
func (e *Env) Slots(t *testing.T, c backpressure.Config) *backpressure.Limiter {
	c.Clock = slotClock{e.Clock}
	c.Name, c.Observer = SlotsName, e.observe
	l, err := backpressure.New(c)
	require.NoError(t, err)
	return l
}

// Hold takes n slots of l for requests of key and class that the
// application never sees (the service is busy with them), until the next
// Step with Release, or the end of the test. It fails the test if l sheds
// one.
func (e *Env) Hold(t *testing.T, l *backpressure.Limiter, key string, class core.Class, n int) {
	for range n {
		p, err := l.Acquire(context.Background(), key, class)
		require.NoError(t, err)
		e.mu.Lock()
		e.held = append(e.held, p)
		e.mu.Unlock()
	}
	t.Cleanup(e.release)
}

// release frees the slots Hold took.
func (e *Env) release() {
	e.mu.Lock()
	held := e.held
	e.held = nil
	e.mu.Unlock()
	for _, p := range held {
		p.Done(core.Succeeded)
	}
}

func (e *Env) observe(_ context.Context, ev core.Event) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

// Last returns the last event the limiters reported of a decision, a wait
// or a shed: the slots' Admitted and Released events, and a limit's
// announcement, say nothing of how a request was decided.
func (e *Env) Last() (core.Event, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.events) - 1; i >= 0; i-- {
		switch ev := e.events[i]; {
		case ev.Kind == core.Admitted, ev.Kind == core.Released, ev.Kind == core.LimitChanged && ev.Cause == "start":
		default:
			return ev, true
		}
	}
	return core.Event{}, false
}

// Events returns the events of outcome the limiters reported, oldest first.
func (e *Env) Events(outcome core.Kind) []core.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var es []core.Event
	for _, ev := range e.events {
		if ev.Kind == outcome {
			es = append(es, ev)
		}
	}
	return es
}

// Keys returns the keys of the events the limiter reported, oldest first.
func (e *Env) Keys() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := make([]string, len(e.events))
	for i, ev := range e.events {
		keys[i] = ev.Key
	}
	return keys
}

// slotClock is a core.Clock reading a sluicetest.ManualClock, whose
// timers never fire.
type slotClock struct{ c *sluicetest.ManualClock }

func (c slotClock) Now() time.Time { return c.c.Now() }

func (c slotClock) SleepUntil(ctx context.Context, t time.Time) error { return c.c.SleepUntil(ctx, t) }

func (slotClock) AfterFunc(time.Duration, func()) (stop func() bool) { return idleStop }

func idleStop() bool { return true }

// FailingStore is a core.Store whose every call fails: a fault injector for
// the limiter's failure modes.
type FailingStore struct{}

// ErrStoreDown is FailingStore's error.
var ErrStoreDown = errors.New("httplimittest: store down")

// Take implements core.Store.
func (FailingStore) Take(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, ErrStoreDown
}

// TakeAll implements core.Store.
func (FailingStore) TakeAll(context.Context, []core.Request, []core.Decision) error {
	return ErrStoreDown
}

// Adjust implements core.Store.
func (FailingStore) Adjust(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, ErrStoreDown
}

// ReturnTurn gives a turn back as Adjust gives units back.
func (s FailingStore) ReturnTurn(ctx context.Context, r core.Request, _ time.Duration) (core.Decision, error) {
	r.Cost = -r.Cost
	return s.Adjust(ctx, r)
}

// Reset implements core.Store.
func (FailingStore) Reset(context.Context, string, *core.Policy) error { return ErrStoreDown }
