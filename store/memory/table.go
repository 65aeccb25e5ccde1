package memory

import "github.com/sluice-go/sluice/core"

// table holds the keys of one policy in one shard, in two generations.
type table[V any] struct {
	policy *core.Policy
	young  generation[V]
	old    generation[V]
}

// generation maps key hashes to slots of a slab. Values live in the slab, not
// in the map, so that updating a key, the hot path, writes only its own slot:
// a map assignment would also write the map's header, a cache line every
// lookup in the shard reads, and make two cores fight over it.
//
// The slab grows in fixed-size chunks that never move, so a slot's address is
// stable and a half-full chunk is the only slack. Slots of dropped keys are
// not reused: a generation lives only until its shard takes in half its share
// of keys, which bounds them.
type generation[V any] struct {
	index  map[uint64]uint32
	chunks [][]V
	next   uint32
}

const chunkBits = 8

func (g *generation[V]) slot(i uint32) *V {
	return &g.chunks[i>>chunkBits][i&(1<<chunkBits-1)]
}

func (g *generation[V]) lookup(h uint64) *V {
	if i, ok := g.index[h]; ok {
		return g.slot(i)
	}
	return nil
}

// add gives h a new zeroed slot.
func (g *generation[V]) add(h uint64) *V {
	if g.index == nil {
		g.index = make(map[uint64]uint32)
	}
	i := g.next
	if int(i>>chunkBits) == len(g.chunks) {
		g.chunks = append(g.chunks, make([]V, 1<<chunkBits))
	}
	g.next++
	g.index[h] = i
	return g.slot(i)
}

func (g *generation[V]) remove(h uint64) {
	if i, ok := g.index[h]; ok {
		var zero V
		*g.slot(i) = zero
		delete(g.index, h)
	}
}

// get returns h's slot, moving it to the young generation if it was in the
// old one; nil if the table does not hold h.
func (t *table[V]) get(h uint64, sh *shard) *V {
	if v := t.young.lookup(h); v != nil {
		return v
	}
	v := t.old.lookup(h)
	if v == nil {
		return nil
	}
	val := *v
	t.old.remove(h)
	nv := t.insert(h, sh)
	*nv = val
	return nv
}

// find is get without moving anything.
func (t *table[V]) find(h uint64) *V {
	if v := t.young.lookup(h); v != nil {
		return v
	}
	return t.old.lookup(h)
}

// insert gives h, which the table does not hold, a zeroed slot in the young
// generation.
func (t *table[V]) insert(h uint64, sh *shard) *V {
	sh.admit()
	return t.young.add(h)
}

func (t *table[V]) drop(h uint64) {
	t.young.remove(h)
	t.old.remove(h)
}

func (t *table[V]) rotate() {
	t.old, t.young = t.young, generation[V]{}
}

func (t *table[V]) len() int { return len(t.young.index) + len(t.old.index) }

// sweep drops the keys whose state full reports as back to full.
func (t *table[V]) sweep(full func(*V) bool) {
	for _, g := range []*generation[V]{&t.young, &t.old} {
		for h, i := range g.index {
			if full(g.slot(i)) {
				g.remove(h)
			}
		}
	}
}
