package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluice-go/sluice/core"
)

// send runs a batch: on a single server, one script call holding every
// operation, or when the batch holds more than WithBatch operations, one
// call for each WithBatch of them, in order, pipelined in one round trip;
// on a Cluster or a Ring, one call per slot (or tag), all in one pipelined
// round trip. It fills each op's out, or its err, and returns the error of
// a single server's round trip that failed for want of a connection (see
// pipe.ping).
func (s *Store) send(ctx context.Context, batch []*op) error {
	if s.layout != single {
		s.sendGroups(ctx, batch)
		return nil
	}
	parts := make([]part, len(batch))
	for i, o := range batch {
		parts[i] = part{o: o}
	}
	if len(parts) > s.batch {
		return s.sendPipelined(ctx, parts)
	}
	sc, cmd := s.command(parts)
	out, err := s.eval(ctx, sc, cmd)
	s.deliver(parts, out, err)
	if err != nil && !errors.Is(err, errScript) {
		return err
	}
	return nil
}

// sendPipelined sends parts in script calls of up to WithBatch operations
// each, in order, in one pipelined round trip. An unbatched store
// (WithBatch(1)) thus still sends one script call per decision, but not one
// round trip per decision: a connection carries as many calls at once as
// decisions wait, as a pool of one connection per caller would, and both
// sides pay one read and one write for all of them.
func (s *Store) sendPipelined(ctx context.Context, parts []part) error {
	calls := make([]call, 0, (len(parts)+s.batch-1)/s.batch)
	for i := 0; i < len(parts); i += s.batch {
		chunk := parts[i:min(i+s.batch, len(parts))]
		sc, cmd := s.command(chunk)
		calls = append(calls, call{script: sc, cmd: cmd, parts: chunk})
	}
	ptrs := make([]*call, len(calls))
	for i := range calls {
		ptrs[i] = &calls[i]
	}
	s.evalAll(ctx, ptrs)
	var failed error
	for i := range calls {
		c := &calls[i]
		s.deliver(c.parts, c.out, c.err)
		if failed == nil && c.err != nil && !errors.Is(c.err, errScript) {
			failed = c.err
		}
	}
	return failed
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
// the batch one for a batch of those under one of them, the algorithm's own
// when every layer has one algorithm, else the generic one. It sets each part's at.
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
	if sc, cmd := s.takes(parts); sc != nil {
		return sc, cmd
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

// takes lays out a batch of lone Takes under one algorithm that has a
// batch script (GCRA, a token bucket) for that script, and sets each part's
// at; it returns a nil script for any other batch.
func (s *Store) takes(parts []part) (*script, []any) {
	alg := parts[0].layer(0).info.alg
	if takesScripts[alg] == nil {
		return nil, nil
	}
	for i := range parts {
		pt := &parts[i]
		if pt.kind != nil || pt.o.kind != opTake || pt.len() != 1 || pt.layer(0).info.alg != alg {
			return nil, nil
		}
	}
	per := 3
	if s.clock != nil {
		per = 4
	}
	cmd := make([]any, 3+len(parts), 3+len(parts)+1+per*len(parts))
	cmd[2] = len(parts)
	for i := range parts {
		parts[i].at = 4 * i
		cmd[3+i] = parts[i].layer(0).key
	}
	cmd = append(cmd, s.graceArg)
	for i := range parts {
		pt := &parts[i]
		l := pt.layer(0)
		cmd = append(cmd, l.info.args[1], l.info.args[2], l.cost)
		if s.clock != nil {
			cmd = append(cmd, pt.o.now)
		}
	}
	return takesScripts[alg], cmd
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
