package storekit

import (
	"time"

	"github.com/sluice-go/sluice/core"
)

// Hold is one layer of a reservation a core.Reserver keeps: the estimate
// it was made with, the usage reported so far (a running total) and the
// units it holds, which start at the estimate. Its methods are the
// arithmetic of core.Reserver's contract; the Redis store's scripts mirror
// them.
type Hold struct {
	Estimate, Used, Held int64
}

// MaxReclaims is the most expired reservations a Reserver reclaims on one
// key in one call, the oldest first (ties by id, in byte order).
const MaxReclaims = 16

// Need records used, the running total of a Settle (never lowering it), and
// returns the units to take to keep the hold one estimate ahead of the
// usage: 0 if it already is, at most MaxCost.
func (h *Hold) Need(used int64) int64 {
	h.Used = max(h.Used, used)
	return min(max(h.Used+h.Estimate-h.Held, 0), MaxCost)
}

// Overdraw returns the units to charge when the take Need asked for was
// denied: the usage beyond the hold, 0 if none; the hold then covers the
// usage.
func (h *Hold) Overdraw() int64 {
	over := max(h.Used-h.Held, 0)
	h.Held += over
	return over
}

// Final returns the adjustment that ends the hold: its unused units given
// back (negative), or the usage beyond it charged (positive).
func (h *Hold) Final() int64 { return h.Used - h.Held }

// Reclaim returns the adjustment of a hold whose time to live has passed:
// the units it holds beyond its usage, given back (zero or negative).
func (h *Hold) Reclaim() int64 { return min(h.Used-h.Held, 0) }

// MaxHoldID is the longest reservation id a Reserver accepts, in bytes, and
// MaxHoldTTL the longest time to live.
const (
	MaxHoldID  = 128
	MaxHoldTTL = 24 * time.Hour
)

// CheckReserve returns the error a Reserver must give for malformed
// Reserve arguments, or nil: a *core.RequestError for an id or ttl out of
// range, a policy it cannot reserve under (LeakyQueue, SlidingLog), or what
// CheckRequests reports.
func CheckReserve(id string, rs []core.Request, ds []core.Decision, ttl time.Duration) error {
	if err := CheckRequests(rs, ds); err != nil {
		return err
	}
	return checkHold(id, rs, ttl)
}

// CheckSettle is CheckReserve for Settle, whose costs are running totals,
// 0 to MaxCost (Field "actual"); ttl is checked unless final.
func CheckSettle(id string, rs []core.Request, ds []core.Decision, final bool, ttl time.Duration) error {
	if len(ds) < len(rs) {
		return &core.RequestError{Field: "decisions", Value: int64(len(rs))}
	}
	for _, r := range rs {
		if err := checkCost(r, "actual", 0); err != nil {
			return err
		}
	}
	if final && ttl == 0 {
		ttl = time.Millisecond
	}
	return checkHold(id, rs, ttl)
}

func checkHold(id string, rs []core.Request, ttl time.Duration) error {
	if len(id) < 1 || len(id) > MaxHoldID {
		return &core.RequestError{Field: "id", Value: int64(len(id))}
	}
	if ttl < time.Millisecond || ttl > MaxHoldTTL {
		return &core.RequestError{Field: "ttl", Value: int64(ttl)}
	}
	for _, r := range rs {
		if a := r.Policy.Algorithm(); a == core.LeakyQueue || a == core.SlidingLog {
			return &core.RequestError{Field: "algorithm", Key: r.Key, Policy: r.Policy.Name()}
		}
	}
	return nil
}
