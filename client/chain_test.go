package client_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/client"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// The chain of issue 22 in virtual time: A offers 200/s for 20s to B, whose
// handler calls C once through a client.Transport; C serves 50/s, then
// 25/s, answering 429 with Retry-After and RateLimit fields beyond. Each
// request runs to its end before the next arrives, its waits (pacing,
// backoff) moving its own time on: an approximation that ignores what
// requests in flight do to each other, and is exact and repeatable.
// benchmarks/chain runs the same chain over loopback HTTP.

// requestClock is the time of the request being run: its arrival, plus
// what it has slept.
type requestClock struct {
	mu     sync.Mutex
	base   time.Time
	offset time.Duration
}

func (c *requestClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base.Add(c.offset)
}

func (c *requestClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := t.Sub(c.Now())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += max(d, 0)
	return ctx.Err()
}

func (c *requestClock) arrive(t time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	spent := c.offset
	c.base, c.offset = t, 0
	return spent
}

func (c *requestClock) spent() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset
}

var chainEpoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// service answers through a Middleware picked per request: C's.
type service struct {
	pick    func() *httplimit.Middleware
	limited int
	served  int
}

func (s *service) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	if _, v := s.pick().DecideHTTP(rec, req, "", nil); v.Proceed {
		s.served++
		rec.WriteHeader(http.StatusOK)
	} else {
		s.limited++
	}
	return rec.Result(), nil
}

func middleware(t *testing.T, clk *requestClock, store core.Store, p *core.Policy, deps []admit.Dependency) *httplimit.Middleware {
	t.Helper()
	lim, err := core.NewLimiter(store)
	require.NoError(t, err)
	all := admit.Func(func(*admit.Request) (string, error) { return "all", nil })
	m, err := httplimit.New(admit.Config{Limiter: lim, Rules: []admit.Rule{{Policy: p, Key: all}}, Clock: clk, Dependencies: deps})
	require.NoError(t, err)
	return m
}

type chainResult struct {
	limited, served   [2]int // 429s C answered, and requests served end to end, by half
	shedWaits         []time.Duration
	maxInFlight       int
	admittedAfterHalf []time.Duration // when B let a request through, after the change
}

func runChain(t *testing.T, link bool) chainResult {
	clk := &requestClock{base: chainEpoch}
	store, err := memory.New(memory.WithClock(clk), memory.WithSweepInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	policy := func(name string, q int64) *core.Policy {
		return core.MustPolicy(core.PolicyConfig{Name: name, Algorithm: core.TokenBucket, Quota: q, Period: time.Second, Burst: q})
	}
	cFull := middleware(t, clk, store, policy("c-full", 50), nil)
	cHalf := middleware(t, clk, store, policy("c-half", 25), nil)
	half := chainEpoch.Add(10 * time.Second)
	c := &service{pick: func() *httplimit.Middleware {
		if clk.Now().Before(half) {
			return cFull
		}
		return cHalf
	}}
	tr, err := client.NewTransport(c, client.WithClock(clk), client.WithRandSource(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	var deps []admit.Dependency
	if link {
		deps = []admit.Dependency{{Name: "c", Routes: []string{"GET /call"}, Capacity: tr.HostCapacity("c.test")}}
	}
	b := middleware(t, clk, store, policy("b-own", 10_000), deps)
	hc := &http.Client{Transport: tr}

	var r chainResult
	type span struct{ from, to time.Time }
	var spans []span
	for i := range 4000 { // 200/s for 20s
		at := chainEpoch.Add(time.Duration(i) * 5 * time.Millisecond)
		clk.arrive(at)
		phase := 0
		if !at.Before(half) {
			phase = 1
		}
		rec := httptest.NewRecorder()
		if _, v := b.DecideHTTP(rec, httptest.NewRequest(http.MethodGet, "/call", nil), "GET /call", nil); !v.Proceed {
			require.Equal(t, http.StatusServiceUnavailable, rec.Code)
			r.shedWaits = append(r.shedWaits, 0)
			continue
		}
		if phase == 1 {
			r.admittedAfterHalf = append(r.admittedAfterHalf, at.Sub(half))
		}
		limited := c.limited
		resp, err := hc.Get("http://c.test/")
		if err == nil {
			resp.Body.Close()
		}
		took := clk.spent()
		spans = append(spans, span{at, at.Add(took)})
		r.limited[phase] += c.limited - limited
		if err == nil && resp.StatusCode == http.StatusOK {
			r.served[phase]++
		} else {
			r.shedWaits = append(r.shedWaits, took)
		}
	}
	// In flight: the most requests whose spans overlap.
	var edges []time.Time
	for _, s := range spans {
		edges = append(edges, s.from)
	}
	slices.SortFunc(spans, func(a, b span) int { return a.to.Compare(b.to) })
	ends := 0
	for i, e := range edges {
		for ends < len(spans) && !spans[ends].to.After(e) {
			ends++
		}
		r.maxInFlight = max(r.maxInFlight, i+1-ends)
	}
	return r
}

func TestChainLinkPropagatesBackpressure(t *testing.T) {
	off, on := runChain(t, false), runChain(t, true)
	for _, r := range []struct {
		name string
		r    chainResult
	}{{"off", off}, {"on", on}} {
		slices.Sort(r.r.shedWaits)
		p99 := time.Duration(0)
		if n := len(r.r.shedWaits); n > 0 {
			p99 = r.r.shedWaits[n*99/100]
		}
		t.Logf("link %s: 429s drawn from C %v, served %v of 500 and 250, excess answered %d (p99 %v), max in flight %d",
			r.name, r.r.limited, r.r.served, len(r.r.shedWaits), p99, r.r.maxInFlight)
	}
	// With the link on: at least 90% fewer 429s drawn from C.
	drawnOff, drawnOn := off.limited[0]+off.limited[1], on.limited[0]+on.limited[1]
	require.Positive(t, drawnOff)
	assert.LessOrEqual(t, 10*drawnOn, drawnOff)
	// Served end to end: at least 95% of C's capacity, in both halves.
	assert.GreaterOrEqual(t, on.served[0], 475)
	assert.GreaterOrEqual(t, on.served[1], 237)
	// The excess is answered at once: no wait at all in virtual time.
	slices.Sort(on.shedWaits)
	require.NotEmpty(t, on.shedWaits)
	assert.Zero(t, on.shedWaits[len(on.shedWaits)*99/100], "B's 503s at p99")
	// In flight: bounded by what C serves in a request's time.
	assert.LessOrEqual(t, on.maxInFlight, 2)
	assert.Greater(t, off.maxInFlight, 100, "without the link, the excess waits in B's client")
	// After C's change, admission follows: no second past the first
	// after it admits more than 25 and the burst.
	perSecond := map[int]int{}
	for _, d := range on.admittedAfterHalf {
		perSecond[int(d/time.Second)]++
	}
	for s := 1; s < 10; s++ {
		assert.LessOrEqual(t, perSecond[s], 25+3, "second %d after the change", s)
	}
}

// AfterFunc runs f on a real timer: the client arms none of its own.
func (c *requestClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return time.AfterFunc(d, f).Stop
}
