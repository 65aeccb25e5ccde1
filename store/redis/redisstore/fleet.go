package redisstore

import (
	"context"
	"slices"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// On a Cluster, a round trip is a pipeline that goes to every master its
// script calls are for, in parallel, and returns when the last of them has
// answered or timed out. A batch holding calls for every master would wait
// on a hung or partitioned one for the whole connection timeout, and with
// it every caller in the batch, whichever master its keys are on: one sick
// node would stop the fleet. So a Cluster store has a pipe per set of
// masters (fleet): an operation goes to the pipe of the masters its keys
// are on, by the client's slot map, and a batch holds only operations for
// the same masters. A hung master then holds up the pipes it is in (the
// operations that need it) and no other; its callers fail at their
// deadline, each alone. Most operations are on one key, or on keys that
// share a hash tag, so most pipes are a node's alone.
//
// A pipe's lanes start when its operations find none idle and end when
// they find nothing to send, so that a set of masters used once costs
// nothing after. Up to maxPipes sets get pipes of their own; operations on
// the sets beyond, and those the slot map does not place yet, share the
// store's first pipe, which sends any batch (as every batch was sent
// before).
const maxPipes = 256

// fleet is a Cluster store's pipes, by the masters their operations go to.
type fleet struct {
	cc     *goredis.ClusterClient
	config pipeConfig // of a node set's pipe
	shared *pipe      // the store's first pipe
	pipes  sync.Map   // masters' addresses, sorted and joined by commas -> *pipe

	mu     sync.Mutex // held to add a pipe
	n      int
	closed bool
}

func newFleet(cc *goredis.ClusterClient, c pipeConfig, shared *pipe) *fleet {
	c.eager, c.lanes = c.lanes, 0
	c.pool = shared.pool
	return &fleet{cc: cc, config: c, shared: shared}
}

// pipeOf returns the pipe that sends o: its masters', or the shared pipe.
// ctx bounds the slot map's first load (MasterForKey loads it if no call
// did yet).
func (f *fleet) pipeOf(ctx context.Context, o *op) *pipe {
	first, ok := f.master(ctx, o.layers[0].key)
	if !ok {
		return f.shared
	}
	set := first
	for i := 1; i < len(o.layers); i++ {
		addr, ok := f.master(ctx, o.layers[i].key)
		if !ok {
			return f.shared
		}
		if addr != first {
			set = f.nodeSet(ctx, o)
			if set == "" {
				return f.shared
			}
			break
		}
	}
	if p, ok := f.pipes.Load(set); ok {
		return p.(*pipe)
	}
	return f.add(set)
}

// nodeSet is the key of the pipe of an operation whose keys are on
// several masters: their addresses, sorted and joined by commas; "" if the
// slot map places any key nowhere.
func (f *fleet) nodeSet(ctx context.Context, o *op) string {
	addrs := make([]string, 0, len(o.layers))
	for _, l := range o.layers {
		addr, ok := f.master(ctx, l.key)
		if !ok {
			return ""
		}
		addrs = append(addrs, addr)
	}
	slices.Sort(addrs)
	return strings.Join(slices.Compact(addrs), ",")
}

// master returns the address of the master serving key, by the slot map.
func (f *fleet) master(ctx context.Context, key string) (string, bool) {
	c, err := f.cc.MasterForKey(ctx, key)
	if err != nil {
		return "", false
	}
	return c.Options().Addr, true
}

// add returns the pipe of set, made if there is none and room for it.
func (f *fleet) add(set string) *pipe {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pipes.Load(set); ok {
		return p.(*pipe)
	}
	if f.closed || f.n >= maxPipes {
		return f.shared
	}
	p := newPipe(f.config)
	f.pipes.Store(set, p)
	f.n++
	return p
}

// stop stops every pipe but the shared one (see pipe.stop), and returns
// them, for the store to wait for their lanes once its connections are
// closed.
func (f *fleet) stop() []*pipe {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	var ps []*pipe
	f.pipes.Range(func(_, v any) bool {
		p := v.(*pipe)
		p.stop()
		ps = append(ps, p)
		return true
	})
	return ps
}
