package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// goDown marks the pipe down and fails what is queued: nothing will be
// sent until Redis answers again.
func (p *pipe) goDown(cause error) {
	p.mu.Lock()
	if !p.down.Swap(true) {
		p.up.Load().cancel()
	}
	rest := p.queue[p.head:]
	p.queue, p.head = nil, 0
	p.mu.Unlock()
	p.fail(rest, fmt.Errorf("%w: %w", errDown, cause))
}

// fail finishes ops taken from the queue with err.
func (p *pipe) fail(ops []*op, err error) {
	for _, o := range ops {
		if o.state.CompareAndSwap(waiting, sent) {
			o.err = err
			p.finish(o)
		} else {
			p.drop(o)
		}
	}
}

// waitUp pings until Redis answers, another lane has brought the pipe up,
// or the pipe closes; then the pipe is up. A ping has no deadline of its
// own: its dial, reads and writes have the connection timeout, and its dial
// waits for a refusing server (see conns). Any reply counts as an answer,
// an error reply too (a PING an ACL refuses), but LOADING: a server still
// loading its data refuses scripts as well.
func (p *pipe) waitUp() {
	for p.ioCtx.Err() == nil && p.down.Load() {
		if err := p.ping(p.ioCtx); answered(err) {
			p.mu.Lock()
			if p.down.Load() {
				p.up.Store(newUpContext(p.ioCtx))
				p.down.Store(false)
			}
			p.mu.Unlock()
			return
		}
		select { // a ping may fail at once (go-redis refusing to dial)
		case <-p.ioCtx.Done():
		case <-time.After(redialInterval):
		}
	}
}

// answers reports whether Redis answers a ping, after a round trip failed.
// One ping is in flight at a time: the lanes whose round trips fail
// meanwhile share its answer, rather than each pinging a server that may
// be hung. A ping is bounded by the connection timeout (see waitUp), and a
// refused dial fails it at once.
func (p *pipe) answers() bool {
	p.probeMu.Lock()
	pr := p.probing
	if pr != nil {
		pr.joined++
		p.probeMu.Unlock()
		<-pr.done
		return pr.ok
	}
	pr = &probe{done: make(chan struct{})}
	p.probing = pr
	p.probeMu.Unlock()
	pr.ok = answered(p.ping(p.ioCtx))
	p.probeMu.Lock()
	p.probing = nil
	p.probeMu.Unlock()
	close(pr.done)
	return pr.ok
}

// probe is a ping in flight after a failed round trip, and its outcome
// once done is closed.
type probe struct {
	done   chan struct{}
	ok     bool
	joined int // lanes waiting for its answer besides its own, under probeMu
}

// answered reports whether a ping's error still means Redis answered.
func answered(err error) bool {
	var re goredis.Error
	return err == nil || errors.As(err, &re) && !goredis.HasErrorPrefix(err, "LOADING")
}

// upContext is a context batches are sent under while the pipe is up.
type upContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newUpContext(parent context.Context) *upContext {
	ctx, cancel := context.WithCancel(parent)
	return &upContext{ctx, cancel}
}

// close stops the lanes: operations still queued fail with errClosed,
// batches waiting for a connection are cut short, and cut, which closes the
// connections, ends the round trips on their way.
func (p *pipe) close(cut func()) {
	p.stop()
	cut()
	p.lanes.Wait()
}

// stop is close but for cutting the connections and waiting for the lanes:
// a store of several pipes (see fleet) stops them all, then cuts the
// connections they share, then waits for their lanes.
func (p *pipe) stop() {
	p.mu.Lock()
	p.closed = true
	rest := p.queue[p.head:]
	p.queue, p.head = nil, 0
	p.ready.Broadcast()
	p.mu.Unlock()
	p.stopIO()
	p.fail(rest, errClosed)
}
