package redisstore

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// pipe carries the store's operations to Redis. Callers queue operations;
// lanes, each a goroutine with a connection of its own, send them: whenever
// a lane is free it takes every operation waiting, up to the batch size,
// and sends them in one round trip (one script call on a single server; one
// per slot, pipelined, on a Cluster). Nothing waits on a timer to fill a
// batch: at one caller each operation goes out alone the moment it is
// queued, and under load the batches grow by themselves, since operations
// pile up while every lane is busy.
//
// A caller waits for its operation only until its deadline, and then gets
// its failure mode, while the operation goes on: the batch it is in is never
// cut short, and its connection is never closed for it. A connection closed
// at every missed deadline would cost the next call a new connection and its
// handshake, which a slow Redis makes slower still, until no call meets its
// deadline at all. An operation whose caller gave up before it was sent is
// dropped unsent.
//
// A few lanes (pipeConfig.lanes) always run: few lanes make big batches,
// and a big batch costs Redis much less per decision than many small ones.
// When Redis is slow, though, an operation that finds every lane busy would
// wait a whole round trip for one to come back, and a round trip near the
// deadline would make it miss. So once the oldest operation has waited
// pipeConfig.patience, an extra lane starts; extra lanes stop when they
// find nothing to send.
type pipe struct {
	pipeConfig

	mu      sync.Mutex
	ready   sync.Cond // signalled when an operation is queued or the pipe closes
	queue   []*op     // waiting, oldest first, from head on
	head    int
	idle    int  // lanes waiting for work
	running int  // lanes, the extra ones included
	watched bool // a timer will look at the queue's oldest operation
	closed  bool
	// inlining counts callers sending their own operation (see claim):
	// each holds one of the idle lanes, which a new operation does not
	// wake.
	inlining int
	// inlineOff is when (UnixNano) callers may send their own operations
	// again after one of them failed.
	inlineOff atomic.Int64
	// returning counts lanes between handing a batch's results out and
	// taking their next batch: while one is, a new operation wakes no other
	// lane, since it will be taken with the others the callers just
	// answered are sending.
	returning atomic.Int32

	down atomic.Bool // see pipeConfig.ping
	// probing is the ping in flight asking whether Redis still answers
	// after a failed round trip (see answers).
	probeMu sync.Mutex
	probing *probe
	ioCtx   context.Context // ends when the pipe closes
	// up is the context batches are sent under: it ends when the pipe goes
	// down, so that a batch waiting for a connection then ends too, rather
	// than being sent whenever a connection comes back, after its callers
	// gave up. (A batch already written waits for its reply, or for the
	// connection timeout: go-redis reads under a deadline, not a context.)
	up     atomic.Pointer[upContext]
	stopIO context.CancelFunc
	lanes  sync.WaitGroup
}

// newOpPool returns a pool of ops.
func newOpPool() *sync.Pool {
	return &sync.Pool{New: func() any { return &op{done: make(chan struct{}, 1)} }}
}

// pipeConfig is what a pipe is made of.
type pipeConfig struct {
	lanes    int           // lanes always running
	eager    int           // lanes started at once for an operation that finds none idle (see push)
	maxLanes int           // the most lanes running at once
	maxBatch int           // the most operations a batch holds
	maxQueue int           // the most operations waiting
	patience time.Duration // how long the oldest operation waits before an extra lane starts
	// inline lets a caller that finds the pipe idle send its operation
	// itself (see claim).
	inline bool
	// send runs a batch, filling each op's out or err. It returns an error
	// when the round trip failed for want of a connection, not for what
	// Redis answered.
	send func(ctx context.Context, batch []*op) error
	// ping, if set, tells whether Redis still answers after such a
	// failure. If it does not, the pipe is down until it does: nothing is
	// queued, and callers get errDown at once instead of waiting out their
	// deadline.
	ping func(ctx context.Context) error
	// pool, if set, is where done ops go, shared by the pipes of a store
	// (see fleet); else the pipe has its own.
	pool *sync.Pool
}

// newPipe starts a pipe's lanes.
func newPipe(c pipeConfig) *pipe {
	if c.maxQueue == 0 {
		c.maxQueue = max(4096, 16*c.maxLanes*c.maxBatch)
	}
	if c.pool == nil {
		c.pool = newOpPool()
	}
	p := &pipe{pipeConfig: c}
	p.ready.L = &p.mu
	p.ioCtx, p.stopIO = context.WithCancel(context.Background())
	p.up.Store(newUpContext(p.ioCtx))
	p.running = c.lanes
	for range c.lanes {
		p.lanes.Go(func() { p.lane(true) })
	}
	return p
}

// op is one operation: a Take, a layered TakeAll, an Adjust or a Reset, on
// one or more layers. It is pooled: the caller owns it until it is queued,
// and gets it back when it is done; an op whose caller stopped waiting is
// released by the lane that finishes it.
type op struct {
	kind   opKind
	size   int64 // a lease's most units
	now    int64 // µs, with the caller's clock; 0 with the server's
	layers []layer
	first  [1]layer // backing for one layer

	out []int64 // four per layer, the script's reply
	err error
	// late, if set, is told the outcome of an op its caller stopped
	// waiting for: out or err once the lane finishes it, or errNotSent if
	// it was dropped unsent. It runs on the lane, which then releases o.
	late func(o *op)

	queued time.Time // when its caller queued it
	state  atomic.Uint32
	done   chan struct{} // receives once the op is done, if its caller waits
	// self and ictx serve an op its caller sends itself: its batch of one,
	// and the context of its round trip.
	self [1]*op
	ictx inlineCtx
}

// inlineCtx is the context of a round trip a caller makes itself: its
// deadline is the caller's, so that the caller's connection gives up then.
// It is part of its op, so that it costs no allocation.
type inlineCtx struct {
	context.Context
	deadline time.Time
}

func (c *inlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

type opKind uint8

const (
	opTake opKind = iota
	opAdjust
	opReset
	opLease
)

// layer is one key of an operation: its Redis key, its policy's script
// arguments, and its cost (take) or delta (adjust).
type layer struct {
	key  string
	info *policyInfo
	cost int64
}

// An op's states.
const (
	waiting uint32 = iota
	sent
	finished
	abandoned
)

// errOverloaded, errDown and errClosed are what a caller gets when its
// operation cannot even be queued, or is failed before it is sent;
// errNotSent is what late hears of an op dropped unsent.
var (
	errOverloaded = errors.New("redisstore: too many operations waiting for Redis")
	errDown       = errors.New("redisstore: unreachable (the last round trip failed, and Redis has not answered since)")
	errClosed     = errors.New("redisstore: store closed")
	errNotSent    = errors.New("redisstore: dropped unsent, its caller gone")
)

// neverSent reports an error that says the operation never reached Redis.
func neverSent(err error) bool {
	return errors.Is(err, errDown) || errors.Is(err, errOverloaded) || errors.Is(err, errClosed) || errors.Is(err, errNotSent)
}

// get returns an empty op of kind k.
func (p *pipe) get(k opKind, now int64) *op {
	o := p.pool.Get().(*op)
	o.kind, o.now = k, now
	o.layers = o.first[:0]
	return o
}

// put returns a done op to the pool.
func (p *pipe) put(o *op) {
	clear(o.layers)
	clear(o.first[:])
	o.layers, o.out, o.err, o.late, o.size = nil, nil, nil, nil, 0
	o.state.Store(waiting)
	p.pool.Put(o)
}

// do queues o at now and waits until it is done or wait ends (or ctx, if
// not the background); err is why it was given up (or could not be queued),
// and the caller must not touch o then. Otherwise o.out or o.err holds the
// result and the caller must put o back. deadline is when wait ends (zero:
// never); if the pipe is idle, the caller sends o itself, until then (see
// claim).
func (p *pipe) do(o *op, now time.Time, wait <-chan struct{}, deadline time.Time, ctx context.Context) error {
	if p.inline && o.late == nil && !deadline.IsZero() && p.claim(now) {
		p.sendInline(o, deadline, ctx)
		return nil
	}
	if err := p.push(o, now); err != nil {
		p.put(o)
		return err
	}
	select {
	case <-o.done:
		return nil
	case <-wait:
	case <-ctx.Done():
	}
	if o.state.CompareAndSwap(waiting, abandoned) || o.state.CompareAndSwap(sent, abandoned) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return context.DeadlineExceeded
	}
	<-o.done // finished meanwhile: the result is there
	return nil
}

// claim reports whether the caller of an operation may send it itself,
// on its own goroutine, rather than hand it to a lane and wait to be handed
// the result: when nothing waits and every lane is idle, so that no batch
// would form anyway. A hand-off from the caller to a lane and back costs
// two goroutine switches per decision, which at one caller were most of
// what a decision cost beyond the round trip itself, and most of its tail.
//
// The caller's round trip ends at its deadline, as a lane's caller stops
// waiting then; but a connection that times out is closed (go-redis cannot
// leave a reply to be read later), which the lanes never do (see pipe). So
// after any failure callers stop sending their own for inlinePause, and
// the lanes serve a slow or failing Redis as they always have: one
// connection replaced per inlinePause at most. An operation whose outcome
// must reach someone after its caller stops waiting (late) goes by a lane.
func (p *pipe) claim(now time.Time) bool {
	if now.UnixNano() < p.inlineOff.Load() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.down.Load() || p.head < len(p.queue) || p.inlining > 0 || p.idle < p.running {
		return false
	}
	p.inlining++
	return true
}

// idleQueue is the most queue capacity a pipe whose lanes have all ended
// keeps.
const idleQueue = 256

// inlinePause is how long callers leave every operation to the lanes after
// one they sent themselves failed.
const inlinePause = time.Second

// sendInline sends o on the caller's goroutine, as its own batch, under a
// context that ends at deadline (or ctx's end), and fills its out or err.
func (p *pipe) sendInline(o *op, deadline time.Time, ctx context.Context) {
	o.self[0] = o
	o.ictx = inlineCtx{Context: ctx, deadline: deadline}
	err := p.send(&o.ictx, o.self[:])
	o.self[0], o.ictx = nil, inlineCtx{}
	if err != nil || o.err != nil && !errors.Is(o.err, errScript) {
		p.inlineOff.Store(time.Now().Add(inlinePause).UnixNano())
	}
	p.mu.Lock()
	p.inlining--
	if p.head < len(p.queue) && p.idle > p.inlining {
		p.ready.Signal() // queued meanwhile: the lane it held takes it
	}
	p.mu.Unlock()
}

func (p *pipe) push(o *op, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return errClosed
	case p.down.Load():
		return errDown
	case len(p.queue)-p.head >= p.maxQueue:
		return errOverloaded
	}
	o.queued = now
	p.queue = append(p.queue, o)
	switch {
	case p.idle > p.inlining:
		if p.returning.Load() == 0 {
			p.ready.Signal()
		}
	case p.running < p.eager && p.returning.Load() == 0:
		// A pipe without lanes always running (a Cluster node's, see fleet)
		// starts one now, not after patience: nothing else would send o.
		p.running++
		p.lanes.Go(func() { p.lane(false) })
	case !p.watched && p.running < p.maxLanes:
		p.watched = true
		time.AfterFunc(p.patience, p.watch)
	}
	return nil
}

// watch starts an extra lane if the oldest operation still waiting has
// waited its patience out while every lane is busy, and looks again later
// while the queue stays backed up.
func (p *pipe) watch() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watched = false
	if p.closed || p.head == len(p.queue) {
		return
	}
	if p.idle > p.inlining {
		p.ready.Signal()
		return
	}
	if p.running >= p.maxLanes {
		return
	}
	if waited := time.Since(p.queue[p.head].queued); waited >= p.patience {
		p.running++
		p.lanes.Go(func() { p.lane(false) })
	} else {
		p.watched = true
		time.AfterFunc(p.patience-waited, p.watch)
	}
}

// lane sends batches until the pipe closes, or, for an extra lane (!stay),
// until it finds nothing to send.
//
// A round trip that failed for want of a connection is evidence that Redis
// is gone only if its dial was refused: a reply that came later than the
// connection timeout (a loaded Redis, a stalled machine) fails its round
// trip alike. So the lane first asks Redis (see answers); only if that
// ping fails too, or the dial was refused, does the pipe go down, and the lane pings until Redis answers again before it
// takes another batch: a batch taken during an outage would be sent
// whenever a connection came back, long after its callers stopped waiting.
// Going down on one late reply would fail every caller at once until the
// next ping, though Redis was serving the others all along.
func (p *pipe) lane(stay bool) {
	batch := make([]*op, 0, p.maxBatch)
	for {
		batch = p.next(batch[:0], stay)
		if len(batch) == 0 {
			return
		}
		err := p.send(p.up.Load().ctx, batch)
		p.returning.Add(1)
		for _, o := range batch {
			p.finish(o)
		}
		clear(batch)
		if err != nil && p.ping != nil && p.ioCtx.Err() == nil {
			p.returning.Add(-1)
			if p.down.Load() || refused(err) || !p.answers() {
				p.goDown(err)
				p.waitUp()
			}
			continue
		}
		// Let the callers just answered run and send their next
		// operations: they go out together in this lane's next batch,
		// rather than one by one as each wakes an idle lane.
		runtime.Gosched()
		p.returning.Add(-1)
	}
}

// next waits for operations and takes up to a batch of those whose callers
// still wait. It returns none once the pipe is closed, or if !stay and
// there is nothing to take; the lane then ends.
func (p *pipe) next(batch []*op, stay bool) []*op {
	var dropped []*op // released once the lock is, since their late hooks run user code
	defer func() {
		for _, o := range dropped {
			p.drop(o)
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for p.head == len(p.queue) && !p.closed {
			if !stay {
				p.running--
				if p.running == 0 && cap(p.queue) > idleQueue {
					// An idle pipe keeps no backlog's worth of memory
					// (a node that hung, see fleet).
					p.queue = nil
				}
				return batch
			}
			p.idle++
			p.ready.Wait()
			p.idle--
		}
		if p.closed {
			return batch
		}
		for p.head < len(p.queue) && len(batch) < p.maxBatch {
			o := p.queue[p.head]
			p.queue[p.head] = nil
			p.head++
			if o.state.CompareAndSwap(waiting, sent) {
				batch = append(batch, o)
			} else {
				dropped = append(dropped, o) // abandoned: never sent
			}
		}
		if p.head < len(p.queue) && p.idle > p.inlining {
			p.ready.Signal() // more than a batch waits: an idle lane takes the rest
		}
		if p.head == len(p.queue) {
			p.queue, p.head = p.queue[:0], 0
		} else if p.head > len(p.queue)/2 {
			n := copy(p.queue, p.queue[p.head:])
			clear(p.queue[n:])
			p.queue, p.head = p.queue[:n], 0
		}
		if len(batch) > 0 {
			return batch
		}
	}
}

// finish hands a sent op's result to its caller, or releases it if the
// caller gave up.
func (p *pipe) finish(o *op) {
	if o.state.CompareAndSwap(sent, finished) {
		o.done <- struct{}{}
		return
	}
	if o.late != nil {
		o.late(o)
	}
	p.put(o)
}

// drop releases an op abandoned before it was sent.
func (p *pipe) drop(o *op) {
	if o.late != nil {
		o.out, o.err = nil, errNotSent
		o.late(o)
	}
	p.put(o)
}
