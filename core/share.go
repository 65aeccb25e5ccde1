package core

import (
	"fmt"
	"time"
)

// maxShares is the largest n Policy.Share accepts: 65,536.
const maxShares = 1 << 16

// Share returns p scaled down to one nth of its limit, for one of n parties
// that enforce it together without sharing state: an instance's fallback
// store while the shared store is down (WithFallback), or one of n keys
// a hot limit is split over.
//
//   - The bucket family keeps p's rate exactly across the n shares: each
//     share refills one unit every n Intervals, and holds Burst/n units
//     rounded down, but at least one.
//   - The window family grants Quota/n units per Period, rounded down, but
//     at least one.
//   - A LeakyQueue share keeps p's MaxDelay: each party's queue releases
//     at a nth of the rate and holds its requests no longer than p does.
//
// So n parties applying their shares admit together at most what p admits,
// plus, when n exceeds p's Burst, one unit per party per burst. The share
// keeps p's name and algorithm, and has a fingerprint of its own. Share(1)
// is p. The error names the field that cannot be shared so finely: a
// bucket's refill slower than one unit in 366 days, or n out of 1 to 65,536.
func (p *Policy) Share(n int) (*Policy, error) {
	if n < 1 || n > maxShares {
		return nil, &PolicyError{Policy: p.name, Field: "Share", Reason: fmt.Sprintf("must be 1 to %d, got %d", maxShares, n)}
	}
	if n == 1 {
		return p, nil
	}
	q := *p
	if p.alg.bucket() {
		q.interval = p.interval * int64(n)
		if q.interval > maxDebt {
			return nil, &PolicyError{Policy: p.name, Field: "Quota", Reason: fmt.Sprintf("shared %d ways refills one unit every %v, beyond 366 days", n, time.Duration(q.interval)*time.Microsecond)}
		}
		q.quota, q.period = 1, q.interval
		q.burst = max(p.burst/int64(n), 1)
	} else {
		q.quota = max(p.quota/int64(n), 1)
		q.burst = q.quota
	}
	q.id = q.fingerprint()
	return &q, nil
}
