package redisstore

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

// ReturnTurn implements core.Store: it gives back the r.Cost units of a
// LeakyQueue grant whose turn comes in in, as a gap where the turn stands
// (storekit.ReturnTurn), placed to the nearest Interval on the store's
// clock; under another algorithm it is Adjust with -r.Cost.
func (s *Store) ReturnTurn(ctx context.Context, r core.Request, in time.Duration) (core.Decision, error) {
	if err := storekit.CheckRequest(r); err != nil {
		return core.Decision{}, err
	}
	pi := s.info(r.Policy)
	if pi.alg != core.LeakyQueue {
		return s.Adjust(ctx, core.Request{Key: r.Key, Policy: r.Policy, Cost: -r.Cost})
	}
	turn := turnInfo(pi, in.Microseconds())
	if s.denies != nil {
		s.denies.forget(pi.fp, r.Key)
	}
	o := s.pipe.get(opAdjust, s.nowArg())
	o.layers = append(o.layers, layer{key: pi.key(r.Key), info: turn, cost: -r.Cost})
	if err := s.do(ctx, o); err != nil {
		return core.Decision{}, &core.StoreError{Op: "adjust", Err: err}
	}
	d := decision(r.Policy, o.out)
	s.pipe.put(o)
	return d, nil
}

// turnInfo is pi, a LeakyQueue policy's, as a turn given back that would
// have come in µs from now: the script reads a queue layer whose algorithm
// is negated as a turn given back, the time until it would have come after
// the policy's arguments.
func turnInfo(pi *policyInfo, in int64) *policyInfo {
	args := append([]any{-int64(core.LeakyQueue)}, pi.args[1:]...)
	return &policyInfo{p: pi.p, fp: pi.fp, alg: pi.alg, prefix: pi.prefix, tail: pi.tail, args: append(args, in)}
}
