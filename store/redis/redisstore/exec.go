package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluice-go/sluice/core"
)

// send runs a batch: on a single server, one script call holding every
// operation; on a Cluster or a Ring, one call per slot (or tag), all in one
// pipelined round trip. It fills each op's out, or its err, and returns the
// error of a single server's round trip that failed for want of a
// connection (see pipe.ping).
func (s *Store) send(ctx context.Context, batch []*op) error {
	if s.layout != single {
		s.sendGroups(ctx, batch)
		return nil
	}
	parts := make([]part, len(batch))
	for i, o := range batch {
		parts[i] = part{o: o}
	}
	sc, cmd := s.command(parts)
	out, err := s.eval(ctx, sc, cmd)
	s.deliver(parts, out, err)
	if err != nil && !errors.Is(err, errScript) {
		return err
	}
	return nil
}

// part is what one script call decides of an operation: all its layers, or
// on a Cluster, those of an operation whose layers span slots that fall in
// the call's slot.
type part struct {
	o      *op
	layers []int // nil: all of o's layers
	kind   any   // the script's operation, when not o's own (the second round trip)
	sign   int64 // -1 to give back what a take took
	at     int   // the part's first value in its call's reply
}

func (pt *part) len() int {
	if pt.layers != nil {
		return len(pt.layers)
	}
	return len(pt.o.layers)
}

func (pt *part) layer(j int) *layer {
	if pt.layers != nil {
		return &pt.o.layers[pt.layers[j]]
	}
	return &pt.o.layers[j]
}

// The scripts' operation codes, boxed once.
var (
	kindTake   any = "t"
	kindAdjust any = "a"
	kindReset  any = "r"
	kinds          = [...]any{opTake: kindTake, opAdjust: kindAdjust, opReset: kindReset, opLease: nil}
)

// command lays out one script call deciding parts, in order, and picks its
// script: the hand-inlined one for a lone Take under GCRA or a token bucket,
// the algorithm's own when every layer has one algorithm, else the generic
// one. It sets each part's at.
func (s *Store) command(parts []part) (*script, []any) {
	if len(parts) == 1 && parts[0].kind == nil && parts[0].o.kind == opTake && parts[0].len() == 1 {
		pt := &parts[0]
		l := pt.layer(0)
		if a := l.info.alg; a == core.GCRA || a == core.TokenBucket {
			cmd := make([]any, 3, 10)
			cmd[2] = 1
			cmd = append(cmd, l.key)
			cmd = append(cmd, l.info.args...)
			cmd = append(cmd, l.cost)
			if s.clock != nil {
				cmd = append(cmd, pt.o.now, s.graceArg)
			}
			return takeScripts[a], cmd
		}
	}
	nkeys, nargs := 0, 1
	alg, mixed := core.Algorithm(0), false
	for i := range parts {
		pt := &parts[i]
		pt.at = 4 * nkeys
		n := pt.len()
		nkeys += n
		nargs += 2
		if s.clock != nil {
			nargs++
		}
		for j := range n {
			nargs += len(pt.layer(j).info.args) + 1
			if a := pt.layer(j).info.alg; alg == 0 {
				alg = a
			} else if a != alg {
				mixed = true
			}
		}
	}
	cmd := make([]any, 3, 3+nkeys+nargs)
	cmd[2] = nkeys
	for i := range parts {
		pt := &parts[i]
		for j := range pt.len() {
			cmd = append(cmd, pt.layer(j).key)
		}
	}
	cmd = append(cmd, s.graceArg)
	for i := range parts {
		pt := &parts[i]
		kind, sign := pt.kind, pt.sign
		switch {
		case kind != nil:
		case pt.o.kind == opLease:
			kind, sign = "l"+strconv.FormatInt(pt.o.size, 10), 1
		default:
			kind, sign = kinds[pt.o.kind], 1
		}
		cmd = append(cmd, kind, pt.len())
		if s.clock != nil {
			cmd = append(cmd, pt.o.now)
		}
		for j := range pt.len() {
			l := pt.layer(j)
			cmd = append(cmd, l.info.args...)
			cmd = append(cmd, sign*l.cost)
		}
	}
	if mixed {
		return genericScript, cmd
	}
	return algScripts[alg], cmd
}

// deliver hands each whole-operation part its values of the reply out, or
// err, and checks that the reply has the values the parts expect.
func (s *Store) deliver(parts []part, out []int64, err error) {
	if err == nil {
		want := 0
		for i := range parts {
			want += 4 * parts[i].len()
		}
		if len(out) != want {
			err = fmt.Errorf("%w: %d values, want %d", errReply, len(out), want)
		}
	}
	for i := range parts {
		pt := &parts[i]
		if err != nil {
			pt.o.err = err
			continue
		}
		pt.o.out = out[pt.at : pt.at+4*pt.len() : pt.at+4*pt.len()]
	}
}

// errReply reports a script reply the store cannot read.
var errReply = errors.New("redisstore: unexpected script reply")

// sendGroups runs a batch on a Cluster or a Ring: operations are grouped by
// the slot (or hash tag) of their keys, one script call per group, all in
// one pipelined round trip. A layered operation whose keys fall in several
// slots is split into a part per slot; if any part is denied, a second
// round trip gives back what the other parts took and replays core's order
// where it matters (see settle).
func (s *Store) sendGroups(ctx context.Context, batch []*op) {
	var (
		groups []*group
		byKey  = make(map[string]*group) // by hash tag, or on a Cluster by slot
		splits []*split
	)
	groupOf := func(key string) *group {
		k := hashTag(key)
		if s.layout == bySlot {
			k = strconv.Itoa(slot(key))
		}
		g := byKey[k]
		if g == nil {
			g = &group{}
			byKey[k] = g
			groups = append(groups, g)
		}
		return g
	}
	for _, o := range batch {
		g := groupOf(o.layers[0].key)
		whole := true
		for _, l := range o.layers[1:] {
			if groupOf(l.key) != g {
				whole = false
				break
			}
		}
		if whole {
			g.parts = append(g.parts, part{o: o})
			continue
		}
		sp := &split{o: o}
		for j, l := range o.layers {
			g := groupOf(l.key)
			k := 0
			for k < len(sp.groups) && sp.groups[k] != g {
				k++
			}
			if k == len(sp.groups) {
				sp.groups = append(sp.groups, g)
				sp.layers = append(sp.layers, nil)
			}
			sp.layers[k] = append(sp.layers[k], j)
		}
		for k, g := range sp.groups {
			g.parts = append(g.parts, part{o: o, layers: sp.layers[k]})
			sp.where = append(sp.where, len(g.parts)-1)
		}
		splits = append(splits, sp)
	}

	calls := make([]*call, len(groups))
	for i, g := range groups {
		sc, cmd := s.command(g.parts)
		calls[i] = &call{script: sc, cmd: cmd}
	}
	s.evalAll(ctx, calls)
	for i, g := range groups {
		g.out, g.err = calls[i].out, calls[i].err
		var whole []part
		for _, pt := range g.parts {
			if pt.layers == nil {
				whole = append(whole, pt)
			}
		}
		if len(whole) == len(g.parts) {
			s.deliver(g.parts, g.out, g.err)
			continue
		}
		if g.err == nil && len(g.out) != 4*countLayers(g.parts) {
			g.err = fmt.Errorf("%w: %d values, want %d", errReply, len(g.out), 4*countLayers(g.parts))
		}
		for _, pt := range whole {
			if g.err != nil {
				pt.o.err = g.err
			} else {
				pt.o.out = g.out[pt.at : pt.at+4*pt.len() : pt.at+4*pt.len()]
			}
		}
	}
	if len(splits) > 0 {
		s.settle(ctx, splits)
	}
}

// group is one script call of a batch on a Cluster: the parts whose keys
// share a slot, and its reply.
type group struct {
	parts []part
	out   []int64
	err   error
}

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
	type redo struct {
		sp     *split
		k      int  // the part
		refund bool // a refund, or a replay
	}
	var (
		again []part
		redos []redo
	)
	for _, sp := range splits {
		o := sp.o
		o.out = make([]int64, 4*len(o.layers))
		first := len(o.layers) // the first denied layer
		firstDenied := make([]int, len(sp.groups))
		var failed error
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
		if failed == nil && first == len(o.layers) {
			continue
		}
		for k, g := range sp.groups {
			idx := sp.layers[k]
			switch {
			case g.err != nil:
				continue
			case firstDenied[k] < 0:
				again = append(again, part{o: o, layers: idx, kind: kindAdjust, sign: -1})
				redos = append(redos, redo{sp, k, true})
			case failed == nil && firstDenied[k] > first && between(idx, first, firstDenied[k]):
				before := 0
				for _, i := range idx {
					if i < first {
						before++
					}
				}
				again = append(again, part{o: o, layers: idx, kind: "t" + strconv.Itoa(before+1), sign: 1})
				redos = append(redos, redo{sp, k, false})
			}
		}
		if failed != nil {
			o.err = failed
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
		rd := redos[i]
		o, idx := rd.sp.o, rd.sp.layers[rd.k]
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
			continue
		}
		if o.err != nil {
			continue // failed: no figures to report
		}
		for j, i := range idx {
			copy(o.out[4*i:4*i+4], c.out[4*j:])
			if rd.refund {
				o.out[4*i] = 1 // a refunded layer reports its standing
			}
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
