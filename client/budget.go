package client

import (
	"math"
	"sync/atomic"
)

// RetryBudget bounds retries to about Ratio per successful attempt, shared
// by every request that uses it: gRPC's retry throttling (gRFC A6), a bucket
// of MaxTokens that each retryable failure drains by one and each other
// answer refills by Ratio, allowing a retry only while it is more than half
// full. It is safe for concurrent use.
type RetryBudget struct {
	// Tokens are kept in millionths (budgetUnit) so that a fractional Ratio
	// needs no float atomics and sums exactly.
	units      atomic.Int64
	maxUnits   int64
	ratioUnits int64
}

// Default retry budget parameters (gRPC's suggested values), and the largest
// bucket accepted.
const (
	DefaultBudgetTokens = 10
	DefaultBudgetRatio  = 0.1
	MaxBudgetTokens     = 1e9
)

// budgetUnit is the resolution of token counts: a millionth of a token.
// MaxBudgetTokens of them fit an int64 with room for any addition.
const budgetUnit = 1_000_000

// NewRetryBudget returns a full budget of maxTokens tokens that gives back
// ratio tokens per successful attempt. maxTokens must be in
// (0, MaxBudgetTokens] and ratio in (0, 1]; both are kept to a millionth,
// and a value that rounds to zero at that resolution is an error too.
func NewRetryBudget(maxTokens, ratio float64) (*RetryBudget, error) {
	// The negated comparisons also reject NaN.
	if !(maxTokens > 0 && maxTokens <= MaxBudgetTokens) {
		return nil, invalid("NewRetryBudget: maxTokens %v is not in (0, %v]", maxTokens, float64(MaxBudgetTokens))
	}
	if !(ratio > 0 && ratio <= 1) {
		return nil, invalid("NewRetryBudget: ratio %v is not in (0, 1]", ratio)
	}
	maxUnits, ratioUnits := int64(math.Round(maxTokens*budgetUnit)), int64(math.Round(ratio*budgetUnit))
	if maxUnits == 0 || ratioUnits == 0 {
		return nil, invalid("NewRetryBudget(%v, %v): below the resolution of a millionth of a token", maxTokens, ratio)
	}
	return newRetryBudget(maxUnits, ratioUnits), nil
}

// newRetryBudget returns a full budget from validated parameters in units.
func newRetryBudget(maxUnits, ratioUnits int64) *RetryBudget {
	b := &RetryBudget{maxUnits: maxUnits, ratioUnits: ratioUnits}
	b.units.Store(maxUnits)
	return b
}

// CanRetry reports whether a retry may be sent now.
func (b *RetryBudget) CanRetry() bool {
	return b.units.Load() > b.maxUnits/2
}

// Failure records an attempt that failed with a retryable error.
func (b *RetryBudget) Failure() { b.add(-budgetUnit) }

// Success records an attempt that got a non-retryable answer.
func (b *RetryBudget) Success() { b.add(b.ratioUnits) }

// Tokens returns the current token count.
func (b *RetryBudget) Tokens() float64 { return float64(b.units.Load()) / budgetUnit }

// add moves the count by d, clamped to [0, maxUnits]. Neither side can
// overflow: both are at most MaxBudgetTokens × budgetUnit = 10^15.
func (b *RetryBudget) add(d int64) {
	for {
		old := b.units.Load()
		n := min(max(old+d, 0), b.maxUnits)
		if n == old || b.units.CompareAndSwap(old, n) {
			return
		}
	}
}
