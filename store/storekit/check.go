package storekit

import "github.com/sluice-go/sluice/core"

// CheckRequest returns the error a store must give for a malformed request,
// or nil: a *core.RequestError, for a request without a policy or a Cost
// outside 1 to MaxCost. Stores call it first, before touching any state, so every
// store rejects the same inputs the same way.
func CheckRequest(r core.Request) error { return checkCost(r, "cost", 1) }

// CheckRequests is CheckRequest for TakeAll's arguments, and reports a
// *core.RequestError (Field "decisions") when ds is shorter than rs.
func CheckRequests(rs []core.Request, ds []core.Decision) error {
	if len(ds) < len(rs) {
		return &core.RequestError{Field: "decisions", Value: int64(len(rs))}
	}
	for _, r := range rs {
		if err := CheckRequest(r); err != nil {
			return err
		}
	}
	return nil
}

// CheckAdjust returns the error a store must give for a malformed Adjust,
// whose Cost is a delta: a refund (negative) or a charge (positive) of at
// most MaxCost units.
func CheckAdjust(r core.Request) error { return checkCost(r, "delta", -MaxCost) }

func checkCost(r core.Request, field string, lo int64) error {
	if r.Policy == nil {
		return &core.RequestError{Field: "policy", Key: r.Key}
	}
	if r.Cost < lo || r.Cost > MaxCost {
		return &core.RequestError{Field: field, Value: r.Cost, Key: r.Key, Policy: r.Policy.Name()}
	}
	return nil
}
