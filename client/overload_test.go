package client

import (
	"container/heap"
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// An overload simulated in virtual time, through the transport's own
// decision (admit, learn, judge, retryDelay: what RoundTrip runs, without
// its sleeps): a backend of capacity backendRate/s, offered overloadFactor
// times that for overloadFor, then 0.9 of it. Every event is ordered by
// its virtual time, so the run is exact and repeatable.
const (
	backendRate    = 1000.0
	overloadFactor = 10
	overloadFor    = 10 * time.Second
	afterFor       = 5 * time.Second
	simLatency     = 10 * time.Millisecond
)

// simBackend is a GCRA of backendRate/s with a burst of as many, answering
// 429 beyond, with fields (q=1000;w=1, as sluice's httplimit reports such a
// policy) or without.
type simBackend struct {
	tat        time.Time
	fields     bool
	retryAfter bool          // on a 429 without fields
	arrived    map[int64]int // attempts reaching the backend, by second
}

func (b *simBackend) answer(at time.Time) *http.Response {
	b.arrived[int64(at.Sub(epoch)/time.Second)]++
	interval := time.Duration(float64(time.Second) / backendRate)
	tolerance := time.Second - interval
	ok := !b.tat.Add(-tolerance).After(at)
	if ok {
		b.tat = laterOf(b.tat, at).Add(interval)
	}
	code := http.StatusOK
	if !ok {
		code = http.StatusTooManyRequests
	}
	if !b.fields {
		if !ok && b.retryAfter {
			return resp(code, "Retry-After", "1")
		}
		return resp(code)
	}
	left := max(int64(time.Second-laterOf(b.tat, at).Sub(at))/int64(interval), 0)
	return resp(code, "RateLimit-Policy", `"b";q=1000;w=1`, "RateLimit", `"b";r=`+itoa(left)+`;t=1`)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

type simEvent struct {
	at      time.Time
	kind    int // simArrive, simAnswer
	start   time.Time
	attempt int
	prev    time.Duration
	sent    time.Time
	resp    *http.Response
}

const (
	simArrive = iota
	simAnswer
)

type simQueue []simEvent

func (q simQueue) Len() int           { return len(q) }
func (q simQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q simQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)        { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// simResult counts, by second, what reached the backend and what was
// served in the end.
type simResult struct {
	arrived, offered, served map[int64]int
}

func simulate(t *testing.T, fields bool, opts ...Option) simResult {
	clk := newFakeClock()
	opts = append([]Option{WithClock(clk), WithRandSource(seeded()), WithoutBreaker()}, opts...)
	tr := newTransport(t, nil, opts...)
	b := &simBackend{fields: fields, retryAfter: true, arrived: map[int64]int{}}
	res := simResult{arrived: b.arrived, offered: map[int64]int{}, served: map[int64]int{}}
	q := &simQueue{}
	// Open-loop arrivals, evenly spaced.
	for at, gap := epoch, time.Duration(float64(time.Second)/(backendRate*overloadFactor)); at.Before(epoch.Add(overloadFor)); at = at.Add(gap) {
		heap.Push(q, simEvent{at: at, kind: simArrive, start: at, attempt: 1})
	}
	end := epoch.Add(overloadFor + afterFor)
	for at, gap := epoch.Add(overloadFor), time.Second*10/9/time.Duration(backendRate); at.Before(end); at = at.Add(gap) {
		heap.Push(q, simEvent{at: at, kind: simArrive, start: at, attempt: 1})
	}
	ctx := context.Background()
	const host = "backend"
	for q.Len() > 0 {
		e := heap.Pop(q).(simEvent)
		clk.mu.Lock()
		clk.now = e.at
		clk.mu.Unlock()
		second := int64(e.start.Sub(epoch) / time.Second)
		switch e.kind {
		case simArrive:
			if e.attempt == 1 {
				res.offered[second]++
			}
			info, err := tr.admit(host, e.at, tr.waitLimit(ctx, e.start, e.at))
			if err != nil {
				continue // failed fast, locally: never sent
			}
			sent := e.at.Add(info.delay)
			e.kind, e.sent, e.resp, e.at = simAnswer, sent, b.answer(sent), sent.Add(simLatency)
			heap.Push(q, e)
		case simAnswer:
			a := attemptResult{resp: e.resp}
			tr.learn(ctx, host, a, e.sent, e.at)
			if v := tr.judge(ctx, a); !v.retryable {
				res.served[second]++
				continue
			}
			delay, cause := tr.retryDelay(ctx, host, e.start, e.attempt, e.prev, a)
			if cause != nil {
				continue
			}
			heap.Push(q, simEvent{at: e.at.Add(delay), kind: simArrive, start: e.start, attempt: e.attempt + 1, prev: delay})
		}
	}
	return res
}

// sum adds m's counts for the seconds in [from, to).
func sum(m map[int64]int, from, to int64) int {
	n := 0
	for s := from; s < to; s++ {
		n += m[s]
	}
	return n
}

// report logs r by second, and returns the backend's load during the
// overload past its first second (whose load includes the backend's burst
// allowance, a second's worth), retries included, as a multiple of its
// capacity, and the share of the requests offered from 2s after the
// overload that were served.
func report(t *testing.T, r simResult) (load, recovered float64) {
	t.Helper()
	over, total := int64(overloadFor/time.Second), int64((overloadFor+afterFor)/time.Second)
	for s := range total {
		t.Logf("second %2d: offered %5d, reached the backend %5d, served %5d", s, r.offered[s], r.arrived[s], r.served[s])
	}
	load = float64(sum(r.arrived, 1, over)) / (backendRate * float64(over-1))
	recovered = float64(sum(r.served, over+2, total)) / float64(sum(r.offered, over+2, total))
	t.Logf("backend load during the overload: %.3fx its capacity; served 2s after it: %.1f%%", load, 100*recovered)
	return load, recovered
}

// With rate-limit fields (a sluice server's), pacing and the adaptive
// throttle hold the backend to its capacity, and a wait past MaxDelay fails
// fast instead of spending the schedule: throughput is back in full within
// 2s of the overload's end.
func TestOverloadStaysWithinCapacityAndRecovers(t *testing.T) {
	r := simulate(t, true, WithAdaptiveThrottle(ThrottleConfig{}), WithPacing(PacingConfig{MaxDelay: 100 * time.Millisecond}))
	load, recovered := report(t, r)
	assert.LessOrEqual(t, load, 1.1)
	assert.GreaterOrEqual(t, recovered, 0.99)
}

// Against bare 429s (with Retry-After but no fields), the learned rate
// probes up from one request a second and the throttle bounds what it lets
// through: the backend is never overloaded, and throughput is back in full
// within 2s of the overload's end; the price is a slow start (the probe
// doubles every second).
func TestOverloadBare429sStayWithinCapacityAndRecover(t *testing.T) {
	r := simulate(t, false, WithAdaptiveThrottle(ThrottleConfig{}), WithPacing(PacingConfig{MaxDelay: 100 * time.Millisecond}))
	load, recovered := report(t, r)
	assert.LessOrEqual(t, load, 1.1)
	assert.GreaterOrEqual(t, recovered, 0.99)
}

// Against bare 429s, the adaptive throttle alone holds the load to about K
// times what the backend accepts: K = 1.1 keeps it under 1.1x, at the
// price of a slow recovery (the share let through grows by K per window);
// the default K = 2 recovers within 2s, at twice the load.
func TestOverloadAdaptiveThrottleAlone(t *testing.T) {
	r := simulate(t, false, WithAdaptiveThrottle(ThrottleConfig{K: 1.1}), WithoutPacing())
	load, _ := report(t, r)
	assert.LessOrEqual(t, load, 1.1)

	r = simulate(t, false, WithAdaptiveThrottle(ThrottleConfig{}), WithoutPacing())
	load, recovered := report(t, r)
	assert.LessOrEqual(t, load, 2.1)
	assert.GreaterOrEqual(t, recovered, 0.99)

	// Without the throttle, every arrival reaches the backend, ten times
	// its capacity, and more with retries.
	r = simulate(t, false, WithoutPacing())
	load, _ = report(t, r)
	assert.Greater(t, load, 5.0)
}
