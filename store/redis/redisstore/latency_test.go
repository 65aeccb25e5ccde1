package redisstore

import (
	"math"
	"sync/atomic"
	"time"
)

// latencies is a histogram of call latencies, safe for concurrent use:
// buckets of a tenth of a decade from a microsecond up, so that a
// percentile read from it is within 26% of the true one. Tests log
// percentiles; they assert decisions, not durations.
type latencies struct {
	n [latencyBuckets]atomic.Int64
}

const latencyBuckets = 80 // 1µs to 100s

func (l *latencies) add(d time.Duration) {
	i := 0
	if us := float64(d) / float64(time.Microsecond); us > 1 {
		i = min(int(10*math.Log10(us)), latencyBuckets-1)
	}
	l.n[i].Add(1)
}

// snapshot returns the counts so far.
func (l *latencies) snapshot() (s [latencyBuckets]int64) {
	for i := range s {
		s[i] = l.n[i].Load()
	}
	return s
}

// percentile returns the upper bound of the bucket holding the q-quantile
// (0 < q < 1) of the latencies counted between two snapshots, and how many
// there were.
func percentile(before, after [latencyBuckets]int64, q float64) (time.Duration, int64) {
	var total int64
	for i := range after {
		total += after[i] - before[i]
	}
	if total == 0 {
		return 0, 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	var seen int64
	for i := range after {
		seen += after[i] - before[i]
		if seen >= rank {
			return time.Duration(math.Pow(10, float64(i+1)/10) * float64(time.Microsecond)), total
		}
	}
	return 0, total
}
