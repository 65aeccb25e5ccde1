package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

var _ core.Reserver = (*Store)(nil)

// reserveScript makes and settles reservations (lua/reserve_head.lua,
// the algorithms a reservation serves, lua/reserve.lua).
var reserveScript = newScript("reserve", readLua("reserve_head")+
	readLua(algFiles[core.TokenBucket])+readLua(algFiles[core.GCRA])+readLua(algFiles[core.LeakyBucket])+
	readLua(algFiles[core.FixedWindow])+readLua(algFiles[core.SlidingCounter])+readLua("reserve"))

// The reservation script's operations.
const (
	opReserve = "r"
	opSettle  = "s"
	opFinal   = "f"
)

// Reserve implements core.Reserver. The holds of layer i are kept beside
// its state, at <state key>:rh (a hash) and <state key>:rx (their
// expiries), in its hash slot; the layers of one slot are decided in one
// script call, and a Cluster's slots in one pipelined round trip. When a
// layer in one slot is denied, the layers granted in others are given
// back in a second round trip, and report their standing; a layer there
// that repeats another's key is decided as its slot saw it, where TakeAll
// would have it only peek after the first denial.
func (s *Store) Reserve(ctx context.Context, id string, rs []core.Request, ds []core.Decision, ttl time.Duration) error {
	if err := storekit.CheckReserve(id, rs, ds, ttl); err != nil {
		return err
	}
	if len(rs) == 0 {
		return nil
	}
	calls, idx := s.reserveCalls(opReserve, id, rs, ttl)
	flags, err := s.runReserve(ctx, calls, idx, rs, ds)
	if err != nil {
		return &core.StoreError{Op: "reserve", Err: err}
	}
	taken, denied, dup := []int(nil), false, false
	for g, f := range flags {
		switch {
		case f < 0:
			dup = true
		case grantedAll(ds, idx[g]):
			taken = append(taken, g)
		default:
			denied = true
		}
	}
	if !dup && !denied {
		return nil
	}
	if len(taken) > 0 {
		// Give back what the other slots took, as TakeAll does.
		back := make([]core.Request, 0, len(rs))
		var backIdx []int
		for _, g := range taken {
			for _, i := range idx[g] {
				back = append(back, core.Request{Key: rs[i].Key, Policy: rs[i].Policy})
				backIdx = append(backIdx, i)
			}
		}
		bds := make([]core.Decision, len(back))
		if _, err := s.settleHolds(ctx, id, back, bds, true, ttl, backIdx); err != nil {
			s.log.WarnContext(ctx, "sluice: a reservation was denied, and giving back what its other slots took failed; the store reclaims them after their TTL",
				"err", err, "id", id)
		}
		// Each layer reports its key's standing without the request: after
		// the last of its layers went back.
		last := make(map[string]int, len(back))
		for j, q := range back {
			last[s.info(q.Policy).key(q.Key)] = j
		}
		for j, i := range backIdx {
			if !dup {
				ds[i] = bds[last[s.info(back[j].Policy).key(back[j].Key)]]
			}
		}
	}
	if dup {
		return fmt.Errorf("redisstore: reservation %q is held already", id)
	}
	return nil
}

// Settle implements core.Reserver.
func (s *Store) Settle(ctx context.Context, id string, rs []core.Request, ds []core.Decision, final bool, ttl time.Duration) (bool, error) {
	if err := storekit.CheckSettle(id, rs, ds, final, ttl); err != nil {
		return false, err
	}
	return s.settleHolds(ctx, id, rs, ds, final, ttl, nil)
}

// settleHolds settles the layers rs of reservation id, whose indices in it are
// index (nil: 0, 1, ...).
func (s *Store) settleHolds(ctx context.Context, id string, rs []core.Request, ds []core.Decision, final bool, ttl time.Duration, index []int) (bool, error) {
	if len(rs) == 0 {
		return false, nil
	}
	op := opSettle
	if final {
		op = opFinal
		ttl = max(ttl, time.Millisecond)
	}
	calls, idx := s.reserveCallsAt(op, id, rs, ttl, index)
	flags, err := s.runReserve(ctx, calls, idx, rs, ds)
	if err != nil {
		return false, &core.StoreError{Op: "settle", Err: err}
	}
	held := false
	for _, f := range flags {
		held = held || f == 1
	}
	return held, nil
}

func grantedAll(ds []core.Decision, idx []int) bool {
	for _, i := range idx {
		if !ds[i].Allowed {
			return false
		}
	}
	return true
}

func (s *Store) reserveCalls(op, id string, rs []core.Request, ttl time.Duration) ([]*call, [][]int) {
	return s.reserveCallsAt(op, id, rs, ttl, nil)
}

// reserveCallsAt lays out one script call per group of layers that may
// share one (a hash slot, a hash tag, or all of them on one server), and
// returns the calls and which layers of rs each decides.
func (s *Store) reserveCallsAt(op, id string, rs []core.Request, ttl time.Duration, index []int) ([]*call, [][]int) {
	var (
		groups [][]int
		where  = map[string]int{}
	)
	for i, r := range rs {
		key := s.info(r.Policy).key(r.Key)
		g := ""
		switch s.layout {
		case bySlot:
			g = strconv.Itoa(slot(key))
		case byTag:
			g = hashTag(key)
		}
		j, ok := where[g]
		if !ok {
			j = len(groups)
			where[g] = j
			groups = append(groups, nil)
		}
		groups[j] = append(groups[j], i)
	}
	now := s.nowArg()
	calls := make([]*call, len(groups))
	for g, members := range groups {
		cmd := make([]any, 3, 3+3*len(members)+5+5*len(members))
		cmd[2] = 3 * len(members)
		for _, i := range members {
			key := s.info(rs[i].Policy).key(rs[i].Key)
			cmd = append(cmd, key, key+":rh", key+":rx")
		}
		cmd = append(cmd, s.graceArg, now, op, id, ttl.Microseconds())
		for _, i := range members {
			pi := s.info(rs[i].Policy)
			at := i
			if index != nil {
				at = index[i]
			}
			cmd = append(cmd, at, pi.args[0], pi.args[1], pi.args[2], rs[i].Cost)
		}
		calls[g] = &call{script: reserveScript, cmd: cmd}
	}
	return calls, groups
}

// runReserve runs the calls in one round trip and writes each layer's
// decision to ds; it returns each call's flag.
func (s *Store) runReserve(ctx context.Context, calls []*call, idx [][]int, rs []core.Request, ds []core.Decision) ([]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if len(calls) == 1 {
		calls[0].out, calls[0].err = s.eval(ctx, calls[0].script, calls[0].cmd)
	} else {
		s.evalAll(ctx, calls)
	}
	flags := make([]int64, len(calls))
	var errs []error
	for g, c := range calls {
		if c.err == nil && len(c.out) != 1+4*len(idx[g]) {
			c.err = fmt.Errorf("%w: %d values, want %d", errReply, len(c.out), 1+4*len(idx[g]))
		}
		if c.err != nil {
			errs = append(errs, c.err)
			continue
		}
		flags[g] = c.out[0]
		for j, i := range idx[g] {
			ds[i] = decision(rs[i].Policy, c.out[1+4*j:])
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return flags, nil
}
