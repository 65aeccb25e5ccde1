package backpressure

import (
	"context"

	"github.com/sluice-go/sluice/core"
)

// waiter is a request in the queue. Waiters are reused, but only once their
// timer can no longer fire.
type waiter struct {
	prev, next *waiter
	l          *Limiter
	ctx        context.Context
	class      core.Class
	key        *keyEntry
	seq        uint64 // its arrival, with Config.Fair
	state      waitState
	reason     Reason // why it was shed
	slot       *slot  // the slot it was given
	ready      chan struct{}
	stop       func() bool // cancels the timeout, nil until it is set
	expire     func()      // w.timeout, bound once
}

type waitState uint8

const (
	waiting waitState = iota
	granted
	shed
)

func (l *Limiter) newWaiter(ctx context.Context, k *keyEntry, class core.Class) *waiter {
	var w *waiter
	if n := len(l.freeWaiters); n > 0 {
		w = l.freeWaiters[n-1]
		l.freeWaiters = l.freeWaiters[:n-1]
	} else {
		w = &waiter{l: l, ready: make(chan struct{}, 1)}
		w.expire = w.timeout
	}
	w.ctx, w.key, w.class, w.state = ctx, k, class, waiting
	return w
}

// recycle keeps w for a later request.
func (l *Limiter) recycle(w *waiter) {
	w.ctx, w.key, w.slot, w.stop, w.reason = nil, nil, nil, nil, 0
	if len(l.freeWaiters) < min(l.queueCap, maxFree) {
		l.freeWaiters = append(l.freeWaiters, w)
	}
}

// timeout sheds w when it has waited MaxWait.
func (w *waiter) timeout() {
	l := w.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.state != waiting {
		return
	}
	l.unlink(w)
	w.state, w.reason = shed, WaitTimeout
	w.ready <- struct{}{}
	l.dropIfIdle(w.key)
}

// waitList is a queue of waiters, oldest first.
type waitList struct {
	head, tail *waiter
}

func (q *waitList) push(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
}

func (q *waitList) remove(w *waiter) {
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
}
