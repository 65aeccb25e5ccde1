package storekit

import (
	"github.com/sluice-go/sluice/core"
)

// Log is the state of one key under a SlidingLog policy: the admitted
// requests still inside the trailing window, oldest first, each with its time
// and cost. It holds at most Quota entries (a charge past that merges into the
// newest entry), so its memory is bounded by the policy. The zero Log is empty.
type Log struct {
	entries []logEntry
	head    int   // entries[:head] have left the window and await compaction
	total   int64 // sum of live costs
}

type logEntry struct{ at, cost int64 }

// Len returns the number of live entries.
func (l *Log) Len() int { return len(l.entries) - l.head }

// TakeLog is Take for SlidingLog policies: a request is admitted while the
// costs of the entries inside the trailing Period, (now−Period, now], plus its
// own stay within Quota. On a denial RetryAfter is the moment enough of the
// oldest entries leave the window.
func TakeLog(policy *core.Policy, l *Log, now, cost int64) (d core.Decision) {
	p := specOf(policy)
	l.trim(now - p.period)
	allowed := cost <= p.quota && l.total+cost <= p.quota
	retry := int64(0)
	if allowed {
		l.push(now, cost, p.quota)
	} else if cost <= p.quota {
		retry = l.freedAt(l.total+cost-p.quota) + p.period - now
	}
	p.decide(&d, allowed, cost, p.quota-l.total, l.resetAt(p.period)-now, retry)
	return d
}

// StatusLog is Status for SlidingLog policies.
func StatusLog(policy *core.Policy, l *Log, now int64) (d core.Decision) {
	p := specOf(policy)
	l.trim(now - p.period)
	p.decide(&d, l.total <= p.quota, 0, p.quota-l.total, l.resetAt(p.period)-now, l.freedAt(l.total-p.quota)+p.period-now)
	return d
}

// AdjustLog is Adjust for SlidingLog policies: a positive delta is logged as
// a request at now, a negative one is taken off the newest entries.
func AdjustLog(policy *core.Policy, l *Log, now, delta int64) core.Decision {
	p := specOf(policy)
	l.trim(now - p.period)
	if delta > 0 {
		l.push(now, delta, p.quota)
	} else {
		l.unwind(-delta)
	}
	return StatusLog(policy, l, now)
}

// FullLog reports whether l is empty at now, so a store may forget it.
func FullLog(policy *core.Policy, l *Log, now int64) bool {
	p := specOf(policy)
	l.trim(now - p.period)
	return l.total == 0
}

// trim drops the entries at or before cutoff.
func (l *Log) trim(cutoff int64) {
	for l.head < len(l.entries) && l.entries[l.head].at <= cutoff {
		l.total -= l.entries[l.head].cost
		l.head++
	}
	if l.head == len(l.entries) {
		l.entries, l.head = l.entries[:0], 0
	} else if l.head > len(l.entries)/2 {
		n := copy(l.entries, l.entries[l.head:])
		l.entries, l.head = l.entries[:n], 0
	}
}

func (l *Log) push(at, cost, limit int64) {
	if cost = min(cost, MaxWindowCount-l.total); cost <= 0 {
		return // the count is at its bound (see Policy.Adjust)
	}
	l.total += cost
	if n := len(l.entries); int64(n-l.head) >= limit || (n > l.head && l.entries[n-1].at == at) {
		l.entries[n-1].cost += cost
		l.entries[n-1].at = max(l.entries[n-1].at, at)
		return
	}
	l.entries = append(l.entries, logEntry{at, cost})
}

// unwind removes n units from the newest entries: a refund gives back what
// was taken last.
func (l *Log) unwind(n int64) {
	for n > 0 && len(l.entries) > l.head {
		last := &l.entries[len(l.entries)-1]
		take := min(n, last.cost)
		last.cost -= take
		l.total -= take
		n -= take
		if last.cost == 0 {
			l.entries = l.entries[:len(l.entries)-1]
		}
	}
}

// freedAt returns the time of the entry whose departure frees need units, or
// of the newest entry if need is more than the log holds.
func (l *Log) freedAt(need int64) int64 {
	var freed int64
	for i := l.head; i < len(l.entries); i++ {
		freed += l.entries[i].cost
		if freed >= need {
			return l.entries[i].at
		}
	}
	if len(l.entries) > l.head {
		return l.entries[len(l.entries)-1].at
	}
	return 0
}

// resetAt returns when the newest entry leaves the window, i.e. the log is
// empty; 0 if it already is.
func (l *Log) resetAt(period int64) int64 {
	if len(l.entries) == l.head {
		return 0
	}
	return l.entries[len(l.entries)-1].at + period
}

// Clone returns an independent copy of l, for deciding on a copy without
// touching the original.
func (l *Log) Clone() *Log {
	return &Log{entries: append([]logEntry(nil), l.entries[l.head:]...), total: l.total}
}
