package client

import "time"

// rollingWindow counts calls and failures over the last Window in buckets of
// equal width, so old outcomes age out without keeping one entry per call.
type rollingWindow struct {
	width   time.Duration
	origin  time.Time
	buckets []windowBucket
}

type windowBucket struct {
	idx          int64 // which width-long slice of time since origin
	calls, fails int64
}

func (w *rollingWindow) init(span time.Duration, n int, origin time.Time) {
	w.width = span / time.Duration(n)
	w.origin = origin
	w.buckets = make([]windowBucket, n)
	w.reset()
}

func (w *rollingWindow) reset() {
	for i := range w.buckets {
		w.buckets[i] = windowBucket{idx: -1}
	}
}

func (w *rollingWindow) index(now time.Time) int64 {
	return max(int64(now.Sub(w.origin)/w.width), 0)
}

func (w *rollingWindow) add(now time.Time, fail bool) {
	idx := w.index(now)
	b := &w.buckets[idx%int64(len(w.buckets))]
	if b.idx != idx {
		*b = windowBucket{idx: idx}
	}
	b.calls++
	if fail {
		b.fails++
	}
}

func (w *rollingWindow) totals(now time.Time) (calls, fails int64) {
	idx := w.index(now)
	for _, b := range w.buckets {
		if b.idx >= 0 && b.idx > idx-int64(len(w.buckets)) && b.idx <= idx {
			calls += b.calls
			fails += b.fails
		}
	}
	return calls, fails
}
