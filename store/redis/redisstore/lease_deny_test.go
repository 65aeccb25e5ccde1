package redisstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// TestLeaseDenialIsNotDegraded: with a lease and a hot key over its limit,
// a request denied while Redis answers is denied with its figures (Limit
// and RetryAfter: the middleware's 429 with Retry-After), never Degraded
// (a 503), at 16 and 64 goroutines on the store's default deadline,
// however long a caller waits for the lease another is fetching on a busy
// machine. Admissions stay within the limit.
//
// A Degraded decision is right only when Redis did not answer a lease in
// time, which the observer hears of (LeaseFailed): on a machine stalled
// past the deadline that may happen, and then each such lease answers at
// most its caller and those waiting for it.
func TestLeaseDenialIsNotDegraded(t *testing.T) {
	c := sharedClient(t)
	const size, run = 20, 3 * time.Second
	p := core.MustPolicy(core.PolicyConfig{Name: "hot-lease", Algorithm: core.TokenBucket, Quota: 1000, Period: time.Second, Burst: 100})
	for _, callers := range []int{16, 64} {
		t.Run(fmt.Sprint("callers=", callers), func(t *testing.T) {
			s := newTestStore(t, c, WithLease(p, size, 50*time.Millisecond), WithTimeout(DefaultTimeout))
			stalls := newStallMeter(t)
			var leaseFailed, storeFailed atomic.Int64
			l, err := core.NewLimiter(s, core.WithObserver(func(_ context.Context, e core.Event) {
				switch e.Kind {
				case core.LeaseFailed:
					leaseFailed.Add(1)
				case core.StoreFailed:
					storeFailed.Add(1)
				}
			}))
			require.NoError(t, err)

			var admitted, denied, degraded, wrong atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for range callers {
				wg.Go(func() {
					for time.Since(start) < run {
						d, err := l.Take(context.Background(), core.Request{Key: "hot", Policy: p, Cost: 1})
						if !assert.NoError(t, err) {
							return
						}
						switch {
						case d.Allowed && !d.Degraded:
							admitted.Add(1)
						case d.Degraded:
							degraded.Add(1)
						case d.Limit == p.Burst() && d.RetryAfter > 0:
							denied.Add(1)
						default:
							if wrong.Add(1) == 1 {
								t.Errorf("a denial without its figures: %+v", d)
							}
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)

			t.Logf("%d callers, %v: %d admitted, %d denied, %d degraded; %d lease round trips failed, %d store failures; worst scheduling delay %v",
				callers, elapsed.Round(time.Millisecond), admitted.Load(), denied.Load(), degraded.Load(), leaseFailed.Load(), storeFailed.Load(), stalls.max())
			assert.Positive(t, denied.Load(), "the key is over its limit")
			assert.Zero(t, wrong.Load())
			assert.Zero(t, storeFailed.Load(), "a leased policy never gets the failure mode")
			if leaseFailed.Load() == 0 {
				assert.Zero(t, degraded.Load(), "Redis answered every lease: every denial is a denial, not Degraded")
			} else {
				// A lease Redis did not answer in time answers its caller
				// and the callers waiting for it alike, and no other.
				t.Logf("%d lease round trips missed the %v deadline on this machine (it stalled %v at most): Degraded denials may follow them",
					leaseFailed.Load(), DefaultTimeout, stalls.max())
				assert.LessOrEqual(t, degraded.Load(), leaseFailed.Load()*int64(callers), "Degraded only for a lease Redis did not answer in time")
			}
			// The limit over the run, what one instance may hold, and two
			// ms of skew between Redis's clock and this one.
			bound := p.Burst() + int64(1000*(elapsed+2*time.Millisecond).Seconds()) + size
			assert.LessOrEqual(t, admitted.Load(), bound, "admissions within the limit")
		})
	}
}
