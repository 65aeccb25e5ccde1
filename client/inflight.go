package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sluice-go/sluice/fields"
)

// inflight caps the requests in flight to each host that published a
// quota of concurrent requests (RateLimit-Policy qu="concurrent-requests")
// at that quota: an attempt beyond it waits for a slot, as long as pacing
// would let it wait (PacingConfig.MaxDelay, the deadlines), then fails
// with a *PaceError (PaceConcurrency). A host that stops publishing the
// quota is forgotten with its other pacing state; the latest quota
// published wins. An attempt holds its slot until the base transport has
// returned the response's header.
type inflight struct {
	mu    sync.Mutex
	hosts *hostTable[*hostSlots]
}

type hostSlots struct {
	limit int           // 0: no cap
	busy  int           // attempts in flight
	freed chan struct{} // closed, and replaced, when a slot frees
	until time.Time     // when the published quota is forgotten
}

// concurrencyMemory is how long a published concurrency quota is
// believed without being published again.
const concurrencyMemory = time.Minute

func newInflight(maxHosts int) *inflight {
	return &inflight{hosts: newHostTable(maxHosts, func(h *hostSlots, now time.Time) bool {
		return h.busy == 0
	})}
}

// publish records the concurrency quota among qs, if any.
func (f *inflight) publish(host string, qs []fields.Status, now time.Time) {
	for _, q := range qs {
		if !q.Concurrent || q.Limit <= 0 {
			continue
		}
		f.mu.Lock()
		h := f.hosts.get(host, now, func() *hostSlots { return &hostSlots{freed: make(chan struct{})} })
		grew := int(min(q.Limit, maxPublishedConcurrency)) > h.limit && h.limit > 0
		h.limit, h.until = int(min(q.Limit, maxPublishedConcurrency)), now.Add(concurrencyMemory)
		if grew {
			h.wake()
		}
		f.mu.Unlock()
		return
	}
}

// maxPublishedConcurrency bounds the concurrency quota believed.
const maxPublishedConcurrency = 1 << 16

// acquire takes a slot for an attempt to host, waiting at most wait for
// one: ok is false if none came in time. A host without a published cap
// takes no slot (release is a no-op).
func (f *inflight) acquire(ctx context.Context, host string, now time.Time, wait func(context.Context) error) (release func(), err error) {
	for {
		f.mu.Lock()
		h, ok := f.hosts.lookup(host, now)
		if ok && !now.Before(h.until) {
			h.limit = 0
		}
		if !ok || h.limit == 0 || h.busy < h.limit {
			if !ok {
				f.mu.Unlock()
				return func() {}, nil
			}
			h.busy++
			f.mu.Unlock()
			return func() { f.release(h) }, nil
		}
		freed := h.freed
		f.mu.Unlock()
		if err := waitFor(ctx, freed, wait); err != nil {
			return nil, err
		}
	}
}

func (f *inflight) release(h *hostSlots) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h.busy--
	h.wake()
}

// wake tells the attempts waiting that a slot may be free. The caller holds
// the lock.
func (h *hostSlots) wake() {
	close(h.freed)
	h.freed = make(chan struct{})
}

// errNoSlot is what waitFor returns when the wait ran out.
var errNoSlot = errors.New("client: no slot free in time")

// waitFor waits until freed is closed, ctx ends, or wait returns (the
// clock's sleep for the longest wait allowed).
func waitFor(ctx context.Context, freed <-chan struct{}, wait func(context.Context) error) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	timeout := make(chan error, 1)
	go func() { timeout <- wait(wctx) }()
	select {
	case <-freed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case err := <-timeout:
		select {
		case <-freed:
			return nil
		default:
		}
		if err == nil {
			return errNoSlot
		}
		return err
	}
}
