package storekit

import (
	"math"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Bounds every store computes within. core.NewPolicy refuses the policies
// outside them (its PolicyConfig documents the same numbers), so a store
// can rely on them: together they keep every intermediate value an exact
// integer in a Lua double (2^53) and every per-key state bounded.
const (
	// MaxPeriod is the longest Period, MaxDelay or queue wait of a policy.
	MaxPeriod = 366 * 24 * time.Hour
	// MaxCounterQuota is the largest quota of a SlidingCounter policy, whose
	// two counts share one 64-bit word in the in-memory state.
	MaxCounterQuota = math.MaxInt32
	// MaxDebt is the most debt a key of the bucket family can be in: charges
	// (Adjust, Reconcile) past the limit stop adding to it once refilling
	// what the key owes would take MaxDebt. A key that deep in debt is shut
	// for a year; the bound keeps every time a store computes exact.
	MaxDebt = MaxPeriod
	// MaxWindowCount is the most units a window algorithm's count can hold,
	// its debt included: charges past it are not counted.
	MaxWindowCount = 1 << 50
	// MaxCost is the most units one request may cost, and the largest size
	// of an adjustment or of a reservation's actual cost: 2^40, core's own
	// bound. A cost above the policy's Burst but within MaxCost is a valid
	// request, denied as Impossible.
	MaxCost = 1 << 40
)

// MostRestrictive returns the decision to report for a layered request, the
// first of ds that no other is MoreRestrictive than. ds must not be empty.
func MostRestrictive(ds []core.Decision) core.Decision {
	best := ds[0]
	for _, d := range ds[1:] {
		if d.MoreRestrictive(best) {
			best = d
		}
	}
	return best
}
