package memory

import (
	"container/heap"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

var _ core.Reserver = (*Store)(nil)

// holds are the reservations a Store keeps (core.Reserver), by key and
// policy, each key's in a heap by expiry. One lock serves them all; each
// operation then takes and adjusts through the store's own Take, TakeAll and
// Adjust, which lock their shards.
type holds struct {
	mu   sync.Mutex
	keys map[holdKey]*keyHolds
	n    int // holds kept, across keys
}

type holdKey struct {
	key string
	fp  uint64
}

// keyHolds are one key's holds: by field (the reservation's id and the
// layer's index), and in a heap, the earliest expiry first.
type keyHolds struct {
	p       *core.Policy
	byField map[string]*hold
	heap    holdHeap
}

type hold struct {
	storekit.Hold
	field string
	exp   int64 // µs since the epoch
	at    int   // index in the heap
}

type holdHeap []*hold

func (h holdHeap) Len() int { return len(h) }
func (h holdHeap) Less(i, j int) bool {
	if h[i].exp != h[j].exp {
		return h[i].exp < h[j].exp
	}
	return h[i].field < h[j].field
}
func (h holdHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].at = i; h[j].at = j }
func (h *holdHeap) Push(x any)   { x.(*hold).at = len(*h); *h = append(*h, x.(*hold)) }
func (h *holdHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

// maxHolds bounds the holds a Store keeps: a Reserve past it fails.
const maxHolds = 1 << 20

var errTooManyHolds = errors.New("memory: too many reservations held (1,048,576)")

// fieldOf names layer i of reservation id: the id, a NUL (which no
// layer index has) and the index.
func fieldOf(id string, i int) string { return id + "\x00" + strconv.Itoa(i) }

// Reserve implements core.Reserver.
func (s *Store) Reserve(ctx context.Context, id string, rs []core.Request, ds []core.Decision, ttl time.Duration) error {
	if err := storekit.CheckReserve(id, rs, ds, ttl); err != nil {
		return err
	}
	hs := &s.holds
	hs.mu.Lock()
	defer hs.mu.Unlock()
	now := s.now()
	khs := make([]*keyHolds, len(rs))
	for i, r := range rs {
		khs[i] = s.reclaim(ctx, r, now)
		if _, ok := khs[i].byField[fieldOf(id, i)]; ok {
			hs.drop(rs, khs)
			return errors.New("memory: reservation " + strconvQuote(id) + " is held already")
		}
	}
	if hs.n+len(rs) > maxHolds {
		hs.drop(rs, khs)
		return errTooManyHolds
	}
	if err := s.TakeAll(ctx, rs, ds); err != nil {
		hs.drop(rs, khs)
		return err
	}
	for i := range rs {
		if !ds[i].Allowed {
			hs.drop(rs, khs)
			return nil
		}
	}
	exp := now + ttl.Microseconds()
	for i, r := range rs {
		h := &hold{Hold: storekit.Hold{Estimate: r.Cost, Held: r.Cost}, field: fieldOf(id, i), exp: exp}
		khs[i].byField[h.field] = h
		heap.Push(&khs[i].heap, h)
		hs.n++
	}
	return nil
}

// Settle implements core.Reserver.
func (s *Store) Settle(ctx context.Context, id string, rs []core.Request, ds []core.Decision, final bool, ttl time.Duration) (bool, error) {
	if err := storekit.CheckSettle(id, rs, ds, final, ttl); err != nil {
		return false, err
	}
	hs := &s.holds
	hs.mu.Lock()
	defer hs.mu.Unlock()
	now := s.now()
	held := false
	for i, r := range rs {
		kh := s.reclaim(ctx, r, now)
		h := kh.byField[fieldOf(id, i)]
		q := core.Request{Key: r.Key, Policy: r.Policy}
		if h == nil {
			ds[i], _ = s.Adjust(ctx, q) // its standing
			hs.dropOne(r, kh)
			continue
		}
		held = true
		need := h.Need(r.Cost)
		switch {
		case final:
			q.Cost = h.Final()
			ds[i], _ = s.Adjust(ctx, q)
			heap.Remove(&kh.heap, h.at)
			delete(kh.byField, h.field)
			hs.n--
			hs.dropOne(r, kh)
			continue
		case need > 0:
			q.Cost = need
			ds[i], _ = s.Take(ctx, q)
			if ds[i].Allowed {
				h.Held += need
			} else if over := h.Overdraw(); over > 0 {
				q.Cost = over
				_, _ = s.Adjust(ctx, q)
			}
		default:
			ds[i], _ = s.Adjust(ctx, q)
		}
		h.exp = now + ttl.Microseconds()
		heap.Fix(&kh.heap, h.at)
	}
	return held, nil
}

// reclaim gives back what the expired holds of r's key hold beyond their
// usage, at most storekit.MaxReclaims of them, and returns the key's holds.
// hs.mu is held.
func (s *Store) reclaim(ctx context.Context, r core.Request, now int64) *keyHolds {
	hs := &s.holds
	k := holdKey{r.Key, r.Policy.Fingerprint()}
	kh := hs.keys[k]
	if kh == nil {
		if hs.keys == nil {
			hs.keys = make(map[holdKey]*keyHolds)
		}
		k.key = strings.Clone(k.key)
		kh = &keyHolds{p: r.Policy, byField: make(map[string]*hold)}
		hs.keys[k] = kh
		return kh
	}
	s.reclaimKey(ctx, r.Key, kh, now)
	return kh
}

// reclaimKey reclaims the expired holds of key, at most
// storekit.MaxReclaims of them. hs.mu is held.
func (s *Store) reclaimKey(ctx context.Context, key string, kh *keyHolds, now int64) {
	for n := 0; n < storekit.MaxReclaims && len(kh.heap) > 0 && kh.heap[0].exp <= now; n++ {
		h := heap.Pop(&kh.heap).(*hold)
		delete(kh.byField, h.field)
		s.holds.n--
		if back := h.Reclaim(); back != 0 {
			_, _ = s.Adjust(ctx, core.Request{Key: key, Policy: kh.p, Cost: back})
		}
	}
}

// reclaimAll reclaims the expired holds of every key, for Sweep: a key no
// one asks about again gives its units back and its memory up all the same.
func (s *Store) reclaimAll() {
	hs := &s.holds
	hs.mu.Lock()
	defer hs.mu.Unlock()
	now := s.now()
	for k, kh := range hs.keys {
		s.reclaimKey(context.Background(), k.key, kh, now)
		if len(kh.heap) == 0 {
			delete(hs.keys, k)
		}
	}
}

// drop forgets the keys of rs that hold nothing.
func (hs *holds) drop(rs []core.Request, khs []*keyHolds) {
	for i, r := range rs {
		if khs[i] != nil {
			hs.dropOne(r, khs[i])
		}
	}
}

func (hs *holds) dropOne(r core.Request, kh *keyHolds) {
	if len(kh.heap) == 0 {
		delete(hs.keys, holdKey{r.Key, r.Policy.Fingerprint()})
	}
}

func strconvQuote(s string) string { return strconv.Quote(s) }
