package memory

import (
	"runtime"
	"sync/atomic"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

// slots is an open-addressed hash table with linear probing, of a power-of-two
// number of slots, laid out in one array of words: each slot is a word that
// says which key it holds and whether it is locked, dead (dropped; probing
// goes past it) or moved (to a larger table, which the shard lock publishes),
// followed by the key's state, one word or two. A GCRA key thus takes 16
// bytes, four to a cache line; a two-word state 24. A filled slot never holds
// another key, so a probe without the lock cannot miss a live key: it either
// finds it or stops at an empty slot and lets the caller look again under
// the lock.
//
// A slot is held to read and write its state: its word locked and, for a
// one-word state, the state swapped for poison, which no state ever is. The
// hot path holds a two-word state, but takes from a one-word state without
// holding it (swap): it reads the state, decides, and swaps the new state in
// with a compare-and-swap, which fails if anything changed it meanwhile. A
// denial, which changes nothing, writes nothing at all: a key over its limit
// costs its cores no atomic operation, and its cache line stays shared
// between them. Poison makes a swap fail while the slot is held, and stays
// in a slot dropped or moved, so a swap can never land in a slot the key has
// left.
type slots struct {
	words  []uint64
	mask   uint64 // the number of slots, less one
	stride uint64 // words a slot takes
	// Keep the counters, written by inserts, off the line the hot path
	// reads; at 128 bytes the struct is allocated 128-byte aligned.
	_ [24]byte

	// Under the shard lock.
	live int // keys held
	used int // slots filled, live or dead
	_    [48]byte
}

const (
	locked = 1 << iota
	dead
	moved
	contended

	// flagBits is how far a key's hash is shifted to make its tag. The bits
	// shifted out are the shard index, the same for every key of a shard.
	flagBits = 8
	flagMask = 1<<flagBits - 1

	// poison is what a held one-word state reads: math.MinInt64, which no
	// one-word state is (a GCRA state is a time since the epoch, never
	// negative).
	poison = 1 << 63

	minSlots = 16
	// A table is rebuilt when more than maxLoad of its slots are filled.
	maxLoadNum, maxLoadDen = 3, 4
	// A hot path that finds a slot locked checks it again a few times, and
	// one whose swaps keep failing tries a few times, before it marks the
	// slot contended; a waiter under the shard lock, which waits only for a
	// hot path to finish, yields now and then in case that one was
	// preempted.
	spinsBeforeContended = 4
	spinsBeforeYield     = 32
)

func newSlots(n int, stride uint64) *slots {
	return &slots{words: make([]uint64, uint64(n)*stride), mask: uint64(n - 1), stride: stride}
}

// len returns the number of slots.
func (s *slots) len() int { return int(s.mask + 1) }

// tagOf returns the tag of a key hash; Store.hash keeps it nonzero.
func tagOf(h uint64) uint64 { return h << flagBits }

// swap takes cost from h's one-word state without holding its slot (see
// slots), writing the decision to d, and reports whether it did: not if s
// does not hold h, or holds it in a slot that is held or moved, which the
// caller then acquires. In a slot marked contended it decides only what
// changes nothing, a denial: a change goes through the shard lock, as the
// mark asks, but a key over its limit stays free to read. If another core's
// swaps keep beating its own, it marks the slot contended and gives up.
//
// sp is p's, or that of a policy equal to p in fingerprint: d reports p.
func (s *slots) swap(h uint64, sp *storekit.Spec, p *core.Policy, now, cost int64, d *core.Decision) bool {
	tag := tagOf(h)
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		j := int(i * 2)
		w := atomic.LoadUint64(&s.words[j])
		switch {
		case w == 0:
			return false
		case w&^flagMask != tag, w == tag|dead:
			continue // another key, or h dropped and perhaps inserted again further on
		case w&^contended != tag:
			return false
		}
		for range spinsBeforeContended {
			v := atomic.LoadUint64(&s.words[j+1])
			if v == poison {
				return false // held since the word was read
			}
			state := storekit.StateOf(int64(v), 0)
			sp.TakeTo(d, &state, now, cost)
			d.Policy = p
			a, _ := state.Words()
			switch {
			case uint64(a) == v:
				return true
			case w != tag:
				return false // contended: changes take turns under the shard lock
			case atomic.CompareAndSwapUint64(&s.words[j+1], v, uint64(a)):
				return true
			case atomic.LoadUint64(&s.words[j]) != tag:
				return false
			}
		}
		atomic.CompareAndSwapUint64(&s.words[j], tag, tag|contended)
		return false
	}
}

// acquire finds h's live slot and holds it, returning the index of its word
// and its state, or -1 if s does not hold it or it moved to a newer table.
// Without the shard lock (underLock false) it also returns -1 for a
// contended slot, with the index of its word, not held, as hot; hot is -1
// otherwise.
func (s *slots) acquire(h uint64, underLock bool) (j, hot int, state storekit.State) {
	tag := tagOf(h)
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		j := int(i * s.stride)
		w := atomic.LoadUint64(&s.words[j])
		if w == 0 {
			return -1, -1, state
		}
		if w&^flagMask != tag {
			continue
		}
		switch s.lock(j, tag, underLock) {
		case 0:
			return j, -1, s.hold(j)
		case contended:
			return -1, j, state
		case moved:
			return -1, -1, state
		}
		// Dead: the key may have been inserted again further on.
	}
}

// hold returns the state of the slot at j, which the caller has locked,
// poisoning a one-word state so that no swap changes it until release.
func (s *slots) hold(j int) storekit.State {
	if s.stride == 2 {
		for {
			v := atomic.LoadUint64(&s.words[j+1])
			if atomic.CompareAndSwapUint64(&s.words[j+1], v, poison) {
				return storekit.StateOf(int64(v), 0)
			}
		}
	}
	return storekit.StateOf(int64(s.words[j+1]), int64(s.words[j+2]))
}

// release sets the state of the held slot at j and lets it go.
func (s *slots) release(j int, state storekit.State) {
	s.setState(j, state)
	s.unlock(j)
}

// take applies a request to the state of the slot at j, whose word the
// caller has locked, or found contended and unlocked under the shard lock:
// the slot is held from there to setState. It leaves the word as it is.
func (s *slots) take(j int, p *core.Policy, now, cost int64, d *core.Decision) {
	state := s.hold(j)
	storekit.TakeTo(d, p, &state, now, cost)
	s.setState(j, state)
}

// setState sets the state of the slot at j, which the caller holds.
func (s *slots) setState(j int, state storekit.State) {
	a, b := state.Words()
	if s.stride == 2 {
		atomic.StoreUint64(&s.words[j+1], uint64(a)) // swaps read it
		return
	}
	s.words[j+1], s.words[j+2] = uint64(a), uint64(b)
}

// holdEach calls f with the index of every live slot of s, held, its tag and
// its state; f releases the slot (setState and a word without the lock), or
// kills it, or marks it moved. The caller holds the shard lock.
func (s *slots) holdEach(f func(j int, tag uint64, state storekit.State)) {
	for j := 0; j < len(s.words); j += int(s.stride) {
		w := atomic.LoadUint64(&s.words[j])
		if w == 0 || w&dead != 0 {
			continue
		}
		if tag := w &^ flagMask; s.lock(j, tag, true) == 0 {
			f(j, tag, s.hold(j))
		}
	}
}

// put fills an empty slot with h and state. s must have an empty slot and
// must not hold h alive; the caller holds the shard lock.
func (s *slots) put(h uint64, state storekit.State) {
	i := h & s.mask
	for atomic.LoadUint64(&s.words[i*s.stride]) != 0 {
		i = (i + 1) & s.mask
	}
	j := int(i * s.stride)
	s.setState(j, state)
	atomic.StoreUint64(&s.words[j], tagOf(h)) // publishes the state to the hot path
	s.live++
	s.used++
}

// kill drops the held slot at j, which holds h. A one-word state stays
// poisoned, so that a swap that read the slot's word before the kill fails.
func (s *slots) kill(j int, h uint64) {
	if s.stride > 2 {
		s.setState(j, storekit.State{})
	}
	atomic.StoreUint64(&s.words[j], tagOf(h)|dead)
	s.live--
}

// lock locks the slot at j, which holds tag, and returns 0; or returns why
// it did not: the slot is dead or moved, or, without the shard lock,
// contended.
//
// Two cores that take turns on one slot move its cache line back and forth
// on every request, which costs more than the request. So a hot path that
// finds the slot locked for a while marks it contended, and from then on
// every request for it goes through the shard lock, whose waiters sleep and
// leave the holder to serve request after request from its own cache. The
// mark lasts until the next sweep or until the slot is copied to a new table;
// a key still fought over is marked again within a few requests.
func (s *slots) lock(j int, tag uint64, underLock bool) uint64 {
	word := &s.words[j]
	for spins := 0; ; spins++ {
		w := atomic.LoadUint64(word)
		switch w &^ contended {
		case tag:
			if w&contended != 0 && !underLock {
				return contended
			}
			if atomic.CompareAndSwapUint64(word, w, w|locked) {
				return 0
			}
		case tag | locked:
			switch {
			case !underLock && spins >= spinsBeforeContended:
				atomic.CompareAndSwapUint64(word, w, w|contended)
				return contended
			case underLock && spins >= spinsBeforeYield:
				runtime.Gosched()
			}
		default:
			return w & (dead | moved)
		}
	}
}

// unlock unlocks the slot at j, keeping its contended mark.
func (s *slots) unlock(j int) { atomic.AndUint64(&s.words[j], ^uint64(locked)) }
