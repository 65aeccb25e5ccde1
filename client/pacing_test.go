package client

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// latency is the virtual time every request takes to be answered.
const latency = 20 * time.Millisecond

// sluiceServer serves the README's example on the test's virtual clock:
// sluice's own middleware, a token bucket of 10 refilled at 2 per second
// per client IP, answering with RateLimit and RateLimit-Policy fields.
func sluiceServer(t *testing.T, clk *fakeClock) *virtualServer {
	t.Helper()
	store, err := memory.New(memory.WithClock(clk), memory.WithSweepInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	limiter, err := core.NewLimiter(store)
	require.NoError(t, err)
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	mw, err := sluicehttp.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{{Policy: perIP, Key: admit.ClientIP()}}})
	require.NoError(t, err)
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello\n") })
	return newVirtualServer(t, clk, mw(hello))
}

// nginxLimiter is nginx's limit_req with nodelay: a leaky bucket of rate
// per second whose excess may reach burst; a request that would take the
// excess past burst is rejected, 429 with Retry-After: 1, and changes
// nothing. Like nginx, it counts in thousandths of a request.
type nginxLimiter struct {
	mu     sync.Mutex
	rate   int64 // requests per second
	burst  int64
	excess int64 // thousandths
	last   time.Time
	seen   bool
}

func (l *nginxLimiter) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.seen {
		l.seen, l.last = true, now
		return true
	}
	ms := max(now.Sub(l.last).Milliseconds(), 0)
	excess := max(l.excess-l.rate*ms, 0) + 1000
	if excess > l.burst*1000 {
		return false
	}
	l.excess, l.last = excess, now
	return true
}

// nginxServer answers as nginx's limit_req 2 r/s burst 3 nodelay does,
// with limit_req_status 429 and a Retry-After of 1 added: no rate-limit
// fields, ever.
func nginxServer(t *testing.T, clk *fakeClock) *virtualServer {
	t.Helper()
	l := &nginxLimiter{rate: 2, burst: 3}
	return newVirtualServer(t, clk, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !l.allow(clk.Now()) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = io.WriteString(w, "hello\n")
	}))
}

// virtualServer is a test server on virtual time: every request takes
// latency, and the server records what it answered, and when.
type virtualServer struct {
	*httptest.Server
	mu     sync.Mutex
	at     []time.Time // when each request arrived
	status []int
}

func newVirtualServer(t *testing.T, clk *fakeClock, h http.Handler) *virtualServer {
	t.Helper()
	vs := &virtualServer{}
	vs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := clk.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		clk.Advance(latency)
		vs.mu.Lock()
		vs.at = append(vs.at, at)
		vs.status = append(vs.status, rec.code)
		vs.mu.Unlock()
	}))
	t.Cleanup(vs.Close)
	return vs
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// steadyRun is what a steady client drew from a server.
type steadyRun struct {
	Requests    int
	Attempts    int
	Drawn429    int // attempts answered 429
	Returned429 int // requests whose final answer was 429
	Elapsed     time.Duration
	MaxGap      time.Duration // longest time between two attempts
	BackToBack  int           // longest run of attempts less than 100ms apart
}

// steady sends n requests one after the other, as fast as the transport
// lets it, and counts what the server answered. Time is virtual: the
// transport's waits and the server's latency move the clock, so the run
// takes no real time and gives the same figures on any machine.
func steady(t *testing.T, srv *virtualServer, clk *fakeClock, n int, opts ...Option) steadyRun {
	t.Helper()
	opts = append([]Option{WithClock(clk), WithRandSource(seeded())}, opts...)
	c := &http.Client{Transport: newTransport(t, nil, opts...)}
	start := clk.Now()
	run := steadyRun{Requests: n}
	for range n {
		resp, err := c.Get(srv.URL)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			run.Returned429++
		}
	}
	run.Elapsed = clk.Now().Sub(start)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	run.Attempts = len(srv.at)
	streak := 1
	for i, code := range srv.status {
		if code == http.StatusTooManyRequests {
			run.Drawn429++
		}
		if i > 0 {
			gap := srv.at[i].Sub(srv.at[i-1])
			run.MaxGap = max(run.MaxGap, gap)
			if gap < 100*time.Millisecond {
				streak++
			} else {
				streak = 1
			}
			run.BackToBack = max(run.BackToBack, streak)
		}
	}
	return run
}

// The README's example server reports its policy. Before pacing at the
// sustained rate, a steady client drew no 429 from it but sent 10 requests
// back to back, then waited 5s for the bucket to fill, and again (100
// requests: runs of 10, longest gap 5.02s). Now it sends one every 500ms.
func TestSteadyClientAgainstSluice(t *testing.T) {
	clk := newFakeClock()
	srv := sluiceServer(t, clk)
	r := steady(t, srv, clk, 100)
	t.Logf("sluice example (bucket 10, 2/s): %+v", r)
	assert.Equal(t, 100, r.Attempts)
	assert.Zero(t, r.Drawn429)
	assert.LessOrEqual(t, r.BackToBack, 2, "the first request, and the tenth of the quota that may go at once")
	assert.Equal(t, 500*time.Millisecond, r.MaxGap, "2/s, never a stall")
}

// An nginx limit_req server sends no rate-limit fields: the transport
// learns a rate from its 429s. Before that, a steady client drew 33 429s
// per 100 requests from it, and 27 of the requests ended in a 429 when the
// retry budget ran dry; now it draws 4 and every request succeeds.
func TestSteadyClientAgainstNginx(t *testing.T) {
	clk := newFakeClock()
	srv := nginxServer(t, clk)
	r := steady(t, srv, clk, 100)
	t.Logf("nginx-like (2 r/s, burst 3): %+v", r)
	assert.LessOrEqual(t, r.Drawn429, 5, "429s drawn per 100 requests")
	assert.Zero(t, r.Returned429)

	// Once learned, the rate holds: about one 429 per 70 requests, and
	// most of what the limit allows.
	clk = newFakeClock()
	srv = nginxServer(t, clk)
	r = steady(t, srv, clk, 1000)
	t.Logf("nginx-like, 1000 requests: %+v", r)
	assert.LessOrEqual(t, r.Drawn429, 20)
	assert.Zero(t, r.Returned429)
	assert.Greater(t, float64(r.Requests)/r.Elapsed.Seconds(), 1.8, "requests per second, of the 2 allowed")
}
