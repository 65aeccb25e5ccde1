package client

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a virtual clock: Sleep advances time at once, so tests never
// really wait. In blocking mode Sleep instead waits for its context, and
// reports on sleeping that it started.
type fakeClock struct {
	mu       sync.Mutex
	now      time.Time
	sleeps   []time.Duration
	block    bool
	sleeping chan time.Duration
}

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func newFakeClock() *fakeClock { return &fakeClock{now: epoch} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := t.Sub(c.Now())
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	block, ch := c.block, c.sleeping
	if !block {
		c.now = c.now.Add(max(d, 0))
	}
	c.mu.Unlock()
	if !block {
		return nil
	}
	if ch != nil {
		ch <- d
	}
	<-ctx.Done()
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// answer is one scripted response.
type answer struct {
	status int
	header map[string]string
	body   string
}

// scriptServer answers with the scripted answers in order, repeating the
// last one, and records what it received.
type scriptServer struct {
	*httptest.Server
	mu      sync.Mutex
	script  []answer
	hits    int
	bodies  []string
	headers []http.Header
	at      []time.Time
	clock   *fakeClock
}

func newScriptServer(t *testing.T, clk *fakeClock, script ...answer) *scriptServer {
	t.Helper()
	s := &scriptServer{script: script, clock: clk}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *scriptServer) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	a := s.script[min(s.hits, len(s.script)-1)]
	s.hits++
	s.bodies = append(s.bodies, string(b))
	s.headers = append(s.headers, r.Header.Clone())
	if s.clock != nil {
		s.at = append(s.at, s.clock.Now())
	}
	s.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func (s *scriptServer) Hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

func (s *scriptServer) Bodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// seeded returns a deterministic random source for tests.
func seeded() rand.Source { return rand.NewPCG(1, 2) }

// recorder collects hook events.
type recorder struct {
	mu      sync.Mutex
	retries []RetryEvent
	giveUps []GiveUpEvent
	paces   []PaceEvent
}

func (r *recorder) hooks() Hooks {
	return Hooks{
		OnRetry: func(e RetryEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.retries = append(r.retries, e)
		},
		OnGiveUp: func(e GiveUpEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.giveUps = append(r.giveUps, e)
		},
		OnPace: func(e PaceEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.paces = append(r.paces, e)
		},
	}
}

func (s *scriptServer) At() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.at...)
}

// newTransport is NewTransport for options that must be valid.
func newTransport(t testing.TB, base http.RoundTripper, opts ...Option) *Transport {
	t.Helper()
	tr, err := NewTransport(base, opts...)
	require.NoError(t, err)
	return tr
}

// newTestBreaker is NewBreaker for a config that must be valid.
func newTestBreaker(t testing.TB, cfg BreakerConfig) *Breaker {
	t.Helper()
	b, err := NewBreaker(cfg)
	require.NoError(t, err)
	return b
}

// newBreakerTransport is NewBreakerTransport for a config that must be valid.
func newBreakerTransport(t testing.TB, base http.RoundTripper, cfg BreakerConfig) *BreakerTransport {
	t.Helper()
	bt, err := NewBreakerTransport(base, cfg)
	require.NoError(t, err)
	return bt
}

// newTestPacer builds a pacer as WithPacing does.
func newTestPacer(t testing.TB, cfg PacingConfig) *pacer {
	t.Helper()
	require.NoError(t, cfg.validate())
	return newPacer(cfg.withDefaults())
}

// newBudget is NewRetryBudget for parameters that must be valid.
func newBudget(t testing.TB, maxTokens, ratio float64) *RetryBudget {
	t.Helper()
	b, err := NewRetryBudget(maxTokens, ratio)
	require.NoError(t, err)
	return b
}

// doAsync sends req through c in a goroutine and delivers its error, having
// closed any response.
func doAsync(c *http.Client, req *http.Request) <-chan error {
	done := make(chan error, 1)
	go func() {
		resp, err := c.Do(req)
		if resp != nil {
			resp.Body.Close()
		}
		done <- err
	}()
	return done
}

// await receives from ch. Nothing in these tests takes real time, so a
// value that never comes means that the code under test hangs. No
// wall-clock guess bounds that (a loaded machine can stall a goroutine for
// seconds): await waits until shortly before the test binary's own
// -timeout would kill the run, then fails naming what it waited for;
// without a timeout it waits as long as the run does.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	var expired <-chan time.Time
	if dl, ok := t.Deadline(); ok {
		timer := time.NewTimer(time.Until(dl) * 9 / 10)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case v := <-ch:
		return v
	case <-expired:
		t.Fatalf("%s never came: the test run is about to time out", what)
		panic("unreachable")
	}
}

// AfterFunc runs f on a real timer: the client arms none of its own.
func (c *fakeClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return time.AfterFunc(d, f).Stop
}
