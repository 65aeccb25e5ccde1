package backpressure

// Fair shares (Config.Fair) are start-time fair queuing (Goyal, Vin and
// Cheng, 1996) over the keys given to Acquire, one schedule per class, with
// a bounded credit:
//
//   - A flow is one key's waiters of one class, oldest first. Each flow has
//     a start tag, in virtual time; the flow with the smallest is admitted
//     next (ties go to the oldest head), the class's virtual time moves up
//     to that tag (never back), and the flow's next start moves on by its
//     cost,
//     shareScale / weight. So while keys wait, a key of weight 2 is
//     admitted twice as often as one of weight 1.
//   - A flow that starts to wait starts at its key's last finish tag, but
//     no earlier than credit admissions before the virtual time (credit is
//     Config.Queue: no key can use more). Plain SFQ gives no credit at all,
//     and then a key that sends within its share, in Poisson bursts, meets
//     a flooding key at every burst: its p99 doubles. With credit, a key
//     that has had less than its share goes ahead of those that had theirs
//     until it has caught up; over any time longer than credit admissions,
//     it still gets no more than its share. The finish tags of keys no
//     longer tracked are remembered, the latest MaxKeys of them, so that a
//     key that comes back has the credit its time away earned it and no
//     more; a key never seen starts at the virtual time, without credit, so
//     that a client that invents keys gains no priority from them.
//   - Class priority comes first, as without Fair: fairness orders the
//     keys within a class only.
//   - A key at its Config.PerKey limit is parked: its flows leave the
//     schedule until one of its requests completes, so that they neither
//     block the others nor go back with more credit than a key that waited.
//   - A full queue makes room, within the arriving request's class, by
//     shedding the newest waiter of the key whose waiters per unit of
//     weight are the most, when it holds more than the arriving key would
//     (longest queue drop): a key that floods the queue loses its own
//     newest waiters, never the others' places. Lower classes are still
//     displaced first.
//
// Tags are uint64 and wrap: only differences are compared. The start tags
// of the flows in a schedule lie within credit+1 costs of its virtual time
// (at most 2^44, far less than half the tag space), and a key's last
// finish tag counts only while it lies in that range; so any staleness is
// safe.

// shareScale is the cost of an admission at weight 1, in virtual time.
const shareScale = 1 << 24

// maxWeight bounds Config.Weights: costs stay at least 1,677 units, whose
// rounding skews no share by more than 0.06%.
const maxWeight = 10_000

// fairQueue is the queue of a Limiter with Config.Fair: a schedule per
// class.
type fairQueue struct {
	ranks   [numClasses]fairRank
	weights map[uint64]uint64 // key hash → cost, for keys not of weight 1
	seq     uint64            // arrivals, to order waiters across keys
	// idle remembers the finish tags of keys no longer tracked, the most
	// recent max(MaxKeys, 1) of them, so that a key that comes back has
	// the credit its time away earned it (and no more), while a key never
	// seen has none.
	idle    map[uint64]idleKey
	evict   []idleRef // ring of the keys put in idle, oldest at evictAt
	evictAt int
	idleSeq uint64
}

type idleKey struct {
	finish [numClasses]uint64
	seq    uint64 // of its place in the ring
}

type idleRef struct {
	hash, seq uint64
}

type fairRank struct {
	vtime uint64   // the start tag of the last flow admitted
	ready flowHeap // flows with waiters whose key has room, smallest start first
	hogs  flowHeap // flows with waiters, most waiters per weight first
}

// tenant is a key's fair-queuing state, kept with its keyEntry.
type tenant struct {
	cost  uint64
	flows [numClasses]flow
}

// flow is one key's waiters of one class.
type flow struct {
	k       *keyEntry
	rank    int
	q       waitList
	n       int
	start   uint64 // the start tag of its head, while it has one
	finish  uint64 // the finish tag of its last admission
	readyAt int    // index in the class's ready heap, -1 if out
	hogAt   int    // index in the class's hogs heap, -1 if out
	backlog uint64 // n × cost: the virtual time its waiters need, for the hogs heap
}

func newFairQueue(weights map[uint64]uint64, remember int) *fairQueue {
	q := &fairQueue{weights: weights, idle: make(map[uint64]idleKey), evict: make([]idleRef, 0, remember)}
	for r := range q.ranks {
		q.ranks[r].hogs.hogs = true
	}
	return q
}

// costOf returns the cost of an admission for weight w.
func costOf(w int) uint64 { return shareScale / uint64(w) }

// join sets up k's fair state when it starts to be tracked.
func (q *fairQueue) join(k *keyEntry) {
	if k.fair == nil {
		k.fair = new(tenant)
		for r := range k.fair.flows {
			f := &k.fair.flows[r]
			f.k, f.rank, f.readyAt, f.hogAt = k, r, -1, -1
		}
	}
	k.fair.cost = shareScale
	if c, ok := q.weights[k.hash]; ok {
		k.fair.cost = c
	}
	m, known := q.idle[k.hash]
	delete(q.idle, k.hash)
	for r := range k.fair.flows {
		if known {
			k.fair.flows[r].finish = m.finish[r]
		} else {
			k.fair.flows[r].finish = q.ranks[r].vtime // no credit
		}
	}
}

// leave remembers k's finish tags once it is no longer tracked, forgetting
// the oldest key remembered if the memory is full.
func (q *fairQueue) leave(k *keyEntry) {
	if len(q.evict) < cap(q.evict) {
		q.evict = append(q.evict, idleRef{})
	} else {
		old := q.evict[q.evictAt]
		if m, ok := q.idle[old.hash]; ok && m.seq == old.seq {
			delete(q.idle, old.hash)
		}
	}
	q.idleSeq++
	m := idleKey{seq: q.idleSeq}
	for r := range k.fair.flows {
		m.finish[r] = k.fair.flows[r].finish
	}
	q.idle[k.hash] = m
	q.evict[q.evictAt] = idleRef{hash: k.hash, seq: q.idleSeq}
	q.evictAt = (q.evictAt + 1) % cap(q.evict)
}

// lead reports whether tag lies at most span past from: a finish tag that
// still counts.
func lead(tag, from, span uint64) bool { return tag-from <= span }

// before compares tags that lie within half the tag space of each other.
func before(a, b uint64) bool { return int64(a-b) < 0 }

// push queues w in its key's flow of its class; ready tells whether the
// key has room (is not parked), credit how many requests a key that had
// less than its share may go ahead.
func (q *fairQueue) push(w *waiter, rank int, ready bool, credit int) {
	q.seq++
	w.seq = q.seq
	t := w.key.fair
	f := &t.flows[rank]
	f.q.push(w)
	f.n++
	f.backlog = uint64(f.n) * t.cost
	fr := &q.ranks[rank]
	if f.n > 1 {
		fr.hogs.fix(f) // its backlog and its tail changed
		return
	}
	f.start = q.floor(f, credit)
	if lead(f.finish, f.start, uint64(credit+1)*t.cost) {
		f.start = f.finish
	}
	fr.hogs.push(f)
	if ready {
		fr.ready.push(f)
	}
}

// remove takes w out of its flow, when it leaves without being admitted.
func (q *fairQueue) remove(w *waiter, rank int) {
	f := &w.key.fair.flows[rank]
	head := f.q.head == w
	f.q.remove(w)
	q.shrink(f, head)
}

// admitNext takes the flow's head out to be admitted, and moves the
// class's virtual time and the flow's tags on.
func (q *fairQueue) admitNext(f *flow) *waiter {
	fr := &q.ranks[f.rank]
	w := f.q.head
	if before(fr.vtime, f.start) {
		fr.vtime = f.start // never back: a flow with credit starts before it
	}
	f.finish = f.start + f.k.fair.cost
	f.q.remove(w)
	f.start = f.finish
	q.shrink(f, true)
	return w
}

// shrink updates the heaps once f has lost a waiter (its head, if head).
func (q *fairQueue) shrink(f *flow, head bool) {
	fr := &q.ranks[f.rank]
	f.n--
	f.backlog = uint64(f.n) * f.k.fair.cost
	if f.n == 0 {
		fr.hogs.remove(f)
		fr.ready.remove(f)
		return
	}
	fr.hogs.fix(f)
	if head && f.readyAt >= 0 {
		fr.ready.fix(f) // its start tag or its head's arrival changed
	}
}

// next returns the flow of the given class to admit from, or nil.
func (q *fairQueue) next(rank int) *flow {
	if hs := q.ranks[rank].ready.fs; len(hs) > 0 {
		return hs[0]
	}
	return nil
}

// park takes k's flows out of the schedules: k is at its per-key limit.
func (q *fairQueue) park(k *keyEntry) {
	for r := range k.fair.flows {
		q.ranks[r].ready.remove(&k.fair.flows[r])
	}
}

// unpark puts k's waiting flows back in the schedules, with no more
// credit than a key that was never out.
func (q *fairQueue) unpark(k *keyEntry, credit int) {
	for r := range k.fair.flows {
		f := &k.fair.flows[r]
		if f.n == 0 || f.readyAt >= 0 {
			continue
		}
		if floor := q.floor(f, credit); before(f.start, floor) {
			f.start = floor
		}
		q.ranks[r].ready.push(f)
	}
}

// floor is the earliest start tag f may have: credit of its requests
// before its class's virtual time.
func (q *fairQueue) floor(f *flow, credit int) uint64 {
	return q.ranks[f.rank].vtime - uint64(credit)*f.k.fair.cost
}

// hog returns the flow of the given class whose waiters per unit of
// weight are the most, or nil.
func (q *fairQueue) hog(rank int) *flow {
	if hs := q.ranks[rank].hogs.fs; len(hs) > 0 {
		return hs[0]
	}
	return nil
}

// flowHeap is a binary heap of flows that knows each flow's place in it.
type flowHeap struct {
	fs   []*flow
	hogs bool // by waiters per weight, most first, then newest tail; else by start tag, then oldest head
}

func (h *flowHeap) less(a, b *flow) bool {
	if h.hogs {
		if a.backlog != b.backlog {
			return a.backlog > b.backlog
		}
		return a.q.tail.seq > b.q.tail.seq // the newest waiter goes first
	}
	if a.start != b.start {
		return before(a.start, b.start)
	}
	return a.q.head.seq < b.q.head.seq
}

func (h *flowHeap) at(f *flow) *int {
	if h.hogs {
		return &f.hogAt
	}
	return &f.readyAt
}

func (h *flowHeap) push(f *flow) {
	*h.at(f) = len(h.fs)
	h.fs = append(h.fs, f)
	h.up(len(h.fs) - 1)
}

func (h *flowHeap) remove(f *flow) {
	i := *h.at(f)
	if i < 0 {
		return
	}
	last := len(h.fs) - 1
	if i != last {
		h.swap(i, last)
	}
	h.fs[last] = nil
	h.fs = h.fs[:last]
	*h.at(f) = -1
	if i != last {
		h.fix(h.fs[i])
	}
}

func (h *flowHeap) fix(f *flow) {
	i := *h.at(f)
	if i < 0 {
		return
	}
	if !h.up(i) {
		h.down(i)
	}
}

func (h *flowHeap) swap(i, j int) {
	h.fs[i], h.fs[j] = h.fs[j], h.fs[i]
	*h.at(h.fs[i]) = i
	*h.at(h.fs[j]) = j
}

// up moves the flow at i towards the root, and reports whether it moved.
func (h *flowHeap) up(i int) bool {
	moved := false
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.fs[i], h.fs[p]) {
			break
		}
		h.swap(i, p)
		i, moved = p, true
	}
	return moved
}

func (h *flowHeap) down(i int) {
	n := len(h.fs)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(h.fs[r], h.fs[l]) {
			m = r
		}
		if !h.less(h.fs[m], h.fs[i]) {
			return
		}
		h.swap(i, m)
		i = m
	}
}
