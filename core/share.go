package core

import (
	"fmt"
	"time"
)

// maxShares is the largest n Policy.Share accepts: 65,536.
const maxShares = 1 << 16

// Share returns p scaled down to one nth of its limit (Burst/n or Quota/n,
// at least one unit, at a nth of the rate), for one of n parties that
// enforce it together without sharing state, such as WithFallback's: together
// they admit at most what p admits, plus one unit per party per burst when
// n exceeds p's Burst. Share(1) is p. The *PolicyError names the field that
// cannot be shared so finely: n out of 1 to 65,536, or a refill slower than
// one unit in 366 days.
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
