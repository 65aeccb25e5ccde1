package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluice-go/sluice/core"
)

// split is a layered operation whose keys fall in several slots: the groups
// it has a part in, which of its layers each part holds, and where in each
// group the part is.
type split struct {
	o      *op
	groups []*group
	layers [][]int
	where  []int
}

func countLayers(parts []part) int {
	n := 0
	for i := range parts {
		n += parts[i].len()
	}
	return n
}

// settle completes the split operations of a batch once their parts have
// been decided: each operation's values come from its parts; an operation
// with a denied or failed part then needs a second round trip (one for all
// of them) that gives back what its parts that passed took, and replays
// each part that denied after the operation's first denial, with layers of
// its own between the two, as core's order would decide it (the layers
// after the first denial only peek). Decisions then equal store/memory's.
// The request is denied whatever that round trip's fate; a refund that
// fails leaves its units taken until the keys' TTL, and is logged.
func (s *Store) settle(ctx context.Context, splits []*split) {
	var (
		again []part
		redos []redo
	)
	for _, sp := range splits {
		first, firstDenied, failed := sp.gather()
		if failed == nil && first == len(sp.o.layers) {
			continue
		}
		again, redos = sp.plan(again, redos, first, firstDenied, failed)
		if failed != nil {
			sp.o.err = failed
		}
	}
	if len(again) == 0 {
		return
	}
	calls := make([]*call, len(again))
	for i := range again {
		sc, cmd := s.command(again[i : i+1])
		calls[i] = &call{script: sc, cmd: cmd}
	}
	s.evalAll(ctx, calls)
	for i, c := range calls {
		s.apply(ctx, redos[i], c)
	}
}

// redo is a part of a split operation sent again by settle: a refund of
// what a part that passed took, or a replay of a part that denied.
type redo struct {
	sp     *split
	k      int   // the part
	refund bool  // a refund, or a replay
	idx    []int // the layers sent, in the order sent
}

// gather copies the values of sp's parts into its operation, and returns
// the first denied layer (len(layers) if none), each part's first denied
// layer (-1 if none) and the parts' errors, joined.
func (sp *split) gather() (first int, firstDenied []int, failed error) {
	o := sp.o
	o.out = make([]int64, 4*len(o.layers))
	first = len(o.layers)
	firstDenied = make([]int, len(sp.groups))
	for k, g := range sp.groups {
		firstDenied[k] = -1
		if g.err == nil && len(g.out) != 4*countLayers(g.parts) {
			g.err = fmt.Errorf("%w: %d values, want %d", errReply, len(g.out), 4*countLayers(g.parts))
		}
		if g.err != nil {
			failed = errors.Join(failed, g.err)
			continue
		}
		pt := &g.parts[sp.where[k]]
		for j, i := range sp.layers[k] {
			copy(o.out[4*i:4*i+4], g.out[pt.at+4*j:])
			if !granted(o.out[4*i]) && firstDenied[k] < 0 {
				firstDenied[k] = i
				first = min(first, i)
			}
		}
	}
	return first, firstDenied, failed
}

// plan appends to again (and redos) the parts of sp to send again: a refund
// for each part that passed, and, when nothing failed, a replay of each part
// that denied after the operation's first denial with layers of its own
// between the two.
func (sp *split) plan(again []part, redos []redo, first int, firstDenied []int, failed error) ([]part, []redo) {
	for k, g := range sp.groups {
		idx := sp.layers[k]
		switch {
		case g.err != nil:
			continue
		case firstDenied[k] < 0:
			back := sp.returnTurns(idx)
			again = append(again, part{o: sp.o, layers: back, kind: kindAdjust, sign: -1})
			redos = append(redos, redo{sp, k, true, back})
		case failed == nil && firstDenied[k] > first && between(idx, first, firstDenied[k]):
			before := 0
			for _, i := range idx {
				if i < first {
					before++
				}
			}
			again = append(again, part{o: sp.o, layers: idx, kind: "t" + strconv.Itoa(before+1), sign: 1})
			redos = append(redos, redo{sp, k, false, idx})
		}
	}
	return again, redos
}

// returnTurns returns the layers idx of a refund in the order to give them
// back, the last taken first, and has a delayed LeakyQueue layer give its
// turn back where it stands in its queue, as a gap, rather than shorten the
// queue from its end: the take may have filled a gap, and the request,
// denied, must leave the queue as it found it (as store/memory's TakeAll,
// which takes nothing from a denied request's layers).
func (sp *split) returnTurns(idx []int) []int {
	back := make([]int, len(idx))
	for j, i := range idx {
		back[len(idx)-1-j] = i
		l := &sp.o.layers[i]
		if l.info.alg == core.LeakyQueue && sp.o.out[4*i] == outDelayed {
			l.info = turnInfo(l.info, sp.o.out[4*i+3])
		}
	}
	return back
}

// apply takes the answer c to rd into its operation's values; a refund that
// failed is logged, its units staying taken.
func (s *Store) apply(ctx context.Context, rd redo, c *call) {
	o, idx := rd.sp.o, rd.idx
	if c.err == nil && len(c.out) != 4*len(idx) {
		c.err = fmt.Errorf("%w: %d values, want %d", errReply, len(c.out), 4*len(idx))
	}
	if c.err != nil {
		if rd.refund && s.log != nil {
			keys := make([]string, len(idx))
			for j, i := range idx {
				keys[j] = o.layers[i].key
			}
			s.log.WarnContext(ctx, "sluice: a layered request was denied, and giving back what its other layers took failed; those units stay taken until their keys expire",
				"err", c.err, "keys", keys)
		}
		return
	}
	if o.err != nil {
		return // failed: no figures to report
	}
	for j, i := range idx {
		copy(o.out[4*i:4*i+4], c.out[4*j:])
		if rd.refund {
			o.out[4*i] = 1 // a refunded layer reports its standing
		}
	}
}

// between reports whether any of idx lies strictly between lo and hi.
func between(idx []int, lo, hi int) bool {
	for _, i := range idx {
		if i > lo && i < hi {
			return true
		}
	}
	return false
}
