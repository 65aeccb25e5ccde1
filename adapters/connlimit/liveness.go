package connlimit

import (
	"errors"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Liveness ends a long-lived connection that misses its keepalive: unless
// Alive is called within every interval (a keepalive written and flushed,
// a pong received, a message read), it calls missed once, which cancels
// the handler's context, so the handler returns and gives its slot back.
// It is safe for concurrent use.
type Liveness struct {
	mu     sync.Mutex
	clock  core.Clock
	every  time.Duration
	missed func()
	stop   func() bool
	seen   bool // Alive since the timer was set
	done   bool
}

// NewLiveness starts watching a connection that must show it is alive
// every interval (at least 1ms) on clock (nil: core.SystemClock), and
// calls missed, once, when it does not. Stop it when the connection ends.
func NewLiveness(clock core.Clock, every time.Duration, missed func()) (*Liveness, error) {
	if every < time.Millisecond {
		return nil, errors.New("connlimit: keepalive interval must be at least 1ms")
	}
	if missed == nil {
		return nil, errors.New("connlimit: nil missed")
	}
	if clock == nil {
		clock = core.SystemClock{}
	}
	l := &Liveness{clock: clock, every: every, missed: missed}
	l.mu.Lock()
	l.stop = clock.AfterFunc(every, l.check)
	l.mu.Unlock()
	return l, nil
}

// Alive records that the connection showed it is there.
func (l *Liveness) Alive() {
	l.mu.Lock()
	l.seen = true
	l.mu.Unlock()
}

// check runs every interval: a connection seen since goes on, one not
// seen has missed its keepalive.
func (l *Liveness) check() {
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		return
	}
	if l.seen {
		l.seen = false
		l.stop = l.clock.AfterFunc(l.every, l.check)
		l.mu.Unlock()
		return
	}
	l.done = true
	l.mu.Unlock()
	l.missed()
}

// Stop stops watching; missed is not called after it returns, unless it
// was running already.
func (l *Liveness) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.done = true
		l.stop()
	}
}
