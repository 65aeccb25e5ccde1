package client

import (
	"math"
	"sync/atomic"
)

// RetryBudget bounds retries to a fraction of recent traffic, shared by all
// requests that use it, so that an outage does not multiply load. It is the
// token bucket of gRPC retry throttling (gRFC A6):
//
//   - the bucket starts full, with MaxTokens tokens;
//   - every attempt that fails with a retryable error takes 1 token;
//   - every attempt answered otherwise (success, or a non-retryable answer:
//     the server is up) gives back Ratio tokens, up to MaxTokens;
//   - a retry is allowed only while tokens > MaxTokens/2.
//
// In steady state retries are held to about Ratio per successful call. During
// a total outage the bucket drains after MaxTokens/2 failures and every later
// request gets exactly one attempt, until successes refill it.
//
// A RetryBudget is safe for concurrent use. Its methods are lock-free.
type RetryBudget struct {
	// Tokens are stored in thousandths so that a fractional Ratio needs no
	// float atomics.
	milli     atomic.Int64
	maxMilli  int64
	ratioMill int64
}

// Default retry budget parameters (gRPC's suggested values).
const (
	DefaultBudgetTokens = 10
	DefaultBudgetRatio  = 0.1
)

// NewRetryBudget returns a full budget. maxTokens <= 0 means
// DefaultBudgetTokens; ratio <= 0 means DefaultBudgetRatio. Ratio is kept to
// three decimals.
func NewRetryBudget(maxTokens, ratio float64) *RetryBudget {
	if maxTokens <= 0 || math.IsNaN(maxTokens) || math.IsInf(maxTokens, 0) {
		maxTokens = DefaultBudgetTokens
	}
	if ratio <= 0 || math.IsNaN(ratio) || math.IsInf(ratio, 0) {
		ratio = DefaultBudgetRatio
	}
	maxTokens = math.Min(maxTokens, 1e9)
	b := &RetryBudget{
		maxMilli:  int64(maxTokens * 1000),
		ratioMill: max(1, int64(math.Min(ratio, 1e9)*1000)),
	}
	b.milli.Store(b.maxMilli)
	return b
}

// CanRetry reports whether a retry may be sent now.
func (b *RetryBudget) CanRetry() bool {
	return b.milli.Load() > b.maxMilli/2
}

// Failure records an attempt that failed with a retryable error.
func (b *RetryBudget) Failure() { b.add(-1000) }

// Success records an attempt that got a non-retryable answer.
func (b *RetryBudget) Success() { b.add(b.ratioMill) }

// Tokens returns the current token count.
func (b *RetryBudget) Tokens() float64 { return float64(b.milli.Load()) / 1000 }

func (b *RetryBudget) add(d int64) {
	for {
		old := b.milli.Load()
		n := min(max(old+d, 0), b.maxMilli)
		if n == old || b.milli.CompareAndSwap(old, n) {
			return
		}
	}
}
