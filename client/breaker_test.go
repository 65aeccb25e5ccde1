package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// stateLog records state changes reported to the hook.
type stateLog struct {
	mu  sync.Mutex
	log []string
}

func (l *stateLog) hook(name string, from, to BreakerState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, fmt.Sprintf("%s:%s->%s", name, from, to))
}

func (l *stateLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.log...)
}

var errBoom = errors.New("boom")

func fail(context.Context) error { return errBoom }
func ok(context.Context) error   { return nil }

func TestBreakerTripsOnConsecutiveFailures(t *testing.T) {
	clk := newFakeClock()
	var log stateLog
	b := newTestBreaker(t, BreakerConfig{Name: "svc", ConsecutiveFailures: 3, OpenTimeout: 10 * time.Second, Clock: clk, OnStateChange: log.hook})
	ctx := context.Background()

	// A success in between resets the count.
	assert.ErrorIs(t, b.Execute(ctx, fail), errBoom)
	assert.ErrorIs(t, b.Execute(ctx, fail), errBoom)
	assert.NoError(t, b.Execute(ctx, ok))
	assert.ErrorIs(t, b.Execute(ctx, fail), errBoom)
	assert.ErrorIs(t, b.Execute(ctx, fail), errBoom)
	assert.Equal(t, BreakerClosed, b.State())
	assert.ErrorIs(t, b.Execute(ctx, fail), errBoom)
	assert.Equal(t, BreakerOpen, b.State())

	called := false
	err := b.Execute(ctx, func(context.Context) error { called = true; return nil })
	assert.False(t, called, "an open breaker does not call")
	assert.ErrorIs(t, err, ErrCircuitOpen)
	var oe *CircuitOpenError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "svc", oe.Name)
	assert.Equal(t, BreakerOpen, oe.State)
	assert.Equal(t, epoch.Add(10*time.Second), oe.RetryAt)
	assert.Contains(t, oe.Error(), `"svc" is open`)
	assert.Equal(t, []string{"svc:closed->open"}, log.get())
}

func TestBreakerHalfOpenProbes(t *testing.T) {
	clk := newFakeClock()
	var log stateLog
	b := newTestBreaker(t, BreakerConfig{Name: "svc", ConsecutiveFailures: 1, OpenTimeout: 10 * time.Second, HalfOpenProbes: 2, Clock: clk, OnStateChange: log.hook})
	_ = b.Execute(context.Background(), fail)
	require.Equal(t, BreakerOpen, b.State())

	clk.Advance(9 * time.Second)
	_, err := b.Allow()
	require.ErrorIs(t, err, ErrCircuitOpen)

	clk.Advance(time.Second)
	p1, err := b.Allow()
	require.NoError(t, err)
	p2, err := b.Allow()
	require.NoError(t, err)
	_, err = b.Allow()
	var oe *CircuitOpenError
	require.ErrorAs(t, err, &oe, "only two probes")
	assert.Equal(t, BreakerHalfOpen, oe.State)
	assert.Contains(t, oe.Error(), "half-open")

	// A cancelled probe gives its slot back.
	p2.Done(core.Ignored)
	p3, err := b.Allow()
	require.NoError(t, err)

	p1.Done(core.Succeeded)
	assert.Equal(t, BreakerHalfOpen, b.State(), "one success of two is not enough")
	p3.Done(core.Succeeded)
	assert.Equal(t, BreakerClosed, b.State())
	assert.Equal(t, []string{"svc:closed->open", "svc:open->half-open", "svc:half-open->closed"}, log.get())
}

func TestBreakerProbeFailureReopens(t *testing.T) {
	clk := newFakeClock()
	b := newTestBreaker(t, BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: 10 * time.Second, Clock: clk})
	_ = b.Execute(context.Background(), fail)
	clk.Advance(10 * time.Second)
	assert.ErrorIs(t, b.Execute(context.Background(), fail), errBoom)
	assert.Equal(t, BreakerOpen, b.State())
	_, err := b.Allow()
	var oe *CircuitOpenError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, clk.Now().Add(10*time.Second), oe.RetryAt, "a new open period")
}

func TestBreakerStalePermitsAreIgnored(t *testing.T) {
	clk := newFakeClock()
	b := newTestBreaker(t, BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Second, Clock: clk})
	slow, err := b.Allow() // admitted while closed
	require.NoError(t, err)
	_ = b.Execute(context.Background(), fail)
	clk.Advance(time.Second)
	probe, err := b.Allow()
	require.NoError(t, err)
	slow.Done(core.Succeeded) // a late answer from before the trip
	assert.Equal(t, BreakerHalfOpen, b.State(), "only the probe decides")
	probe.Done(core.Succeeded)
	assert.Equal(t, BreakerClosed, b.State())
	BreakerPermit{}.Done(core.Failed) // the zero permit is inert
}

func TestBreakerFailureRateOverRollingWindow(t *testing.T) {
	clk := newFakeClock()
	b := newTestBreaker(t, BreakerConfig{FailureRate: 0.5, MinCalls: 10,
		Window: 10 * time.Second, Buckets: 10, Clock: clk})
	ctx := context.Background()
	// 4 failures and 5 successes: 9 calls, under MinCalls.
	for i := range 9 {
		if i%2 == 0 {
			_ = b.Execute(ctx, ok)
		} else {
			_ = b.Execute(ctx, fail)
		}
	}
	assert.Equal(t, BreakerClosed, b.State())
	// Old outcomes age out: after the window, 9 fresh successes and one
	// failure are 10%.
	clk.Advance(11 * time.Second)
	for range 9 {
		_ = b.Execute(ctx, ok)
	}
	_ = b.Execute(ctx, fail)
	assert.Equal(t, BreakerClosed, b.State())
	// More failures within the window: the 8th makes 9 of 18, 50%.
	for i := range 8 {
		clk.Advance(100 * time.Millisecond)
		_ = b.Execute(ctx, fail)
		if i < 7 {
			assert.Equal(t, BreakerClosed, b.State(), "failure %d", i+1)
		}
	}
	assert.Equal(t, BreakerOpen, b.State())
}

func TestBreakerWindowForgetsOldBuckets(t *testing.T) {
	clk := newFakeClock()
	b := newTestBreaker(t, BreakerConfig{FailureRate: 0.5, MinCalls: 4,
		Window: 4 * time.Second, Buckets: 4, Clock: clk})
	for range 3 {
		_ = b.Execute(context.Background(), fail)
		clk.Advance(2 * time.Second)
	}
	// Each failure aged out before the next ones made MinCalls.
	assert.Equal(t, BreakerClosed, b.State())
	calls, fails := b.window.totals(clk.Now())
	assert.EqualValues(t, 1, calls)
	assert.EqualValues(t, 1, fails)
}

func TestBreakerRetryAfterHoldsItOpen(t *testing.T) {
	clk := newFakeClock()
	b := newTestBreaker(t, BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: 10 * time.Second, MaxHold: time.Minute, Clock: clk})
	p, _ := b.Allow()
	p.FailUntil(clk.Now().Add(30 * time.Second))
	clk.Advance(29 * time.Second)
	assert.Equal(t, BreakerOpen, b.State(), "held open until the server's time")
	clk.Advance(time.Second)
	assert.Equal(t, BreakerHalfOpen, b.State())

	// Capped by OpenTimeout + MaxHold.
	p, _ = b.Allow()
	p.FailUntil(clk.Now().Add(24 * time.Hour))
	clk.Advance(70*time.Second - time.Millisecond)
	assert.Equal(t, BreakerOpen, b.State())
	clk.Advance(time.Millisecond)
	assert.Equal(t, BreakerHalfOpen, b.State())
}

func TestBreakerCallAndPanics(t *testing.T) {
	clk := newFakeClock()
	b := newTestBreaker(t, BreakerConfig{ConsecutiveFailures: 1, Clock: clk})
	v, err := CallThrough(context.Background(), b, func(context.Context) (int, error) { return 42, nil })
	assert.NoError(t, err)
	assert.Equal(t, 42, v)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = CallThrough(ctx, b, func(context.Context) (int, error) { return 0, nil })
	assert.ErrorIs(t, err, context.Canceled)

	// A cancellation inside the call is not the dependency's fault.
	_, err = CallThrough(context.Background(), b, func(context.Context) (int, error) { return 0, context.Canceled })
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, BreakerClosed, b.State())

	assert.Panics(t, func() {
		_ = b.Execute(context.Background(), func(context.Context) error { panic("bad") })
	})
	assert.Equal(t, BreakerOpen, b.State(), "a panic counts as a failure")
}

func TestBreakerCustomClassify(t *testing.T) {
	clk := newFakeClock()
	notFound := errors.New("not found")
	b := newTestBreaker(t, BreakerConfig{ConsecutiveFailures: 2, Clock: clk, Classify: func(err error) core.Outcome {
		if errors.Is(err, notFound) {
			return core.Succeeded
		}
		return defaultClassify(err)
	}})
	for range 5 {
		_ = b.Execute(context.Background(), func(context.Context) error { return notFound })
	}
	assert.Equal(t, BreakerClosed, b.State())
}

func TestBreakerHookMayCallBack(t *testing.T) {
	clk := newFakeClock()
	var b *Breaker
	var seen []BreakerState
	b = newTestBreaker(t, BreakerConfig{ConsecutiveFailures: 1, Clock: clk, OnStateChange: func(_ string, _, to BreakerState) {
		seen = append(seen, b.State()) // would deadlock if called under the lock
	}})
	_ = b.Execute(context.Background(), fail)
	assert.Equal(t, []BreakerState{BreakerOpen}, seen)
}

func TestBreakerConcurrentUse(t *testing.T) {
	var log stateLog
	clk := newFakeClock()
	b := newTestBreaker(t, BreakerConfig{ConsecutiveFailures: 3, FailureRate: 0.5, OpenTimeout: time.Millisecond,
		HalfOpenProbes: 2, Clock: clk, OnStateChange: log.hook})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				_ = b.Execute(context.Background(), func(context.Context) error {
					if (g+i)%3 != 0 { // two failures in three: the rate trips it
						return errBoom
					}
					return nil
				})
				_ = b.State()
				clk.Advance(time.Millisecond / 4) // time passes as calls are made
			}
		})
	}
	wg.Wait()
	// Hooks run outside the lock, so their order across goroutines is not
	// the breaker's; but each one must be a legal move, and the breaker
	// must have opened and half-opened.
	legal := map[string]bool{":closed->open": true, ":open->half-open": true, ":half-open->closed": true, ":half-open->open": true}
	seen := map[string]bool{}
	for _, e := range log.get() {
		assert.True(t, legal[e], e)
		seen[e] = true
	}
	assert.True(t, seen[":closed->open"] && seen[":open->half-open"], "%v", seen)
}

func TestStateString(t *testing.T) {
	assert.Equal(t, "closed", BreakerClosed.String())
	assert.Equal(t, "open", BreakerOpen.String())
	assert.Equal(t, "half-open", BreakerHalfOpen.String())
	assert.Equal(t, "BreakerState(7)", BreakerState(7).String())
	assert.Equal(t, "succeeded", core.Succeeded.String())
	assert.Equal(t, "failed", core.Failed.String())
	assert.Equal(t, "ignored", core.Ignored.String())
	assert.Equal(t, "Outcome(7)", core.Outcome(7).String())
}

func TestBreakerTransportCountsOnlyServerFailures(t *testing.T) {
	clk := newFakeClock()
	code := 404
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(code)
	}))
	defer srv.Close()
	host := srv.Listener.Addr().String()
	bt := newBreakerTransport(t, nil, BreakerConfig{ConsecutiveFailures: 3, Clock: clk})
	c := &http.Client{Transport: bt}
	do := func() int {
		resp, err := c.Get(srv.URL)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, status := range []int{400, 401, 403, 404, 429, 501} {
		mu.Lock()
		code = status
		mu.Unlock()
		for range 5 {
			assert.Equal(t, status, do())
		}
	}
	assert.Equal(t, BreakerClosed, bt.State(host), "4xx never trip the breaker")

	mu.Lock()
	code = 502
	mu.Unlock()
	for range 3 {
		assert.Equal(t, 502, do())
	}
	assert.Equal(t, BreakerOpen, bt.State(host))
	_, err := c.Get(srv.URL)
	assert.ErrorIs(t, err, ErrCircuitOpen)
	assert.Equal(t, BreakerClosed, bt.State("other.example:80"))
	bt.CloseIdleConnections()
}

func TestBreakerTransport503RetryAfterHoldsOpen(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 503, header: map[string]string{"Retry-After": "60"}})
	bt := newBreakerTransport(t, nil, BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: 10 * time.Second, Clock: clk})
	c := &http.Client{Transport: bt}
	resp, err := c.Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	host := srv.Listener.Addr().String()
	clk.Advance(30 * time.Second)
	assert.Equal(t, BreakerOpen, bt.State(host))
	clk.Advance(30 * time.Second)
	assert.Equal(t, BreakerHalfOpen, bt.State(host))
}

// TestDrill4_BreakerAroundDrill3Call is the reference's drill 4: a breaker
// (threshold 5, reset 10s) around drill 3's call. The service dies mid-run;
// once the breaker opens, calls fail at once, without a dial or a wait;
// after 10s a probe finds the service back and closes it.
func TestDrill4_BreakerAroundDrill3Call(t *testing.T) {
	clk := newFakeClock()
	var log stateLog
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := httptest.NewServer(handler)
	addr := srv.Listener.Addr().String()

	// Every connection attempt passes through here, refused or not.
	var dials atomic.Int64
	dialer := &net.Dialer{}
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}}
	defer base.CloseIdleConnections()
	tr := newTransport(t, base, drill3(clk,
		WithBreaker(BreakerConfig{ConsecutiveFailures: 5, OpenTimeout: 10 * time.Second, OnStateChange: log.hook}))...)
	c := &http.Client{Transport: tr}
	call := func() (int, error) {
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}

	for range 10 {
		code, err := call()
		require.NoError(t, err)
		require.Equal(t, 200, code)
	}

	// Kill the service: connections are refused from now on.
	srv.Close()
	base.CloseIdleConnections()
	dialed := dials.Load()

	// Drill 3 retries the first call (4 attempts, 4 failures); the second
	// call's first failure is the fifth in a row and trips the breaker,
	// which also stops that call's retries.
	_, err := call()
	var re *RetryError
	require.ErrorAs(t, err, &re)
	assert.ErrorIs(t, err, ErrMaxAttempts)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	_, err = call()
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 1, re.Attempts)
	assert.ErrorIs(t, err, ErrCircuitOpen)
	assert.Equal(t, []string{addr + ":closed->open"}, log.get())
	assert.Equal(t, dialed+5, dials.Load(), "each refused attempt was a dial")

	// Open: every call fails at once, without a network attempt: no dial,
	// and no wait (the clock would record it).
	dialed, slept := dials.Load(), len(clk.Sleeps())
	for range 200 {
		_, err := call()
		require.ErrorIs(t, err, ErrCircuitOpen)
	}
	assert.Equal(t, dialed, dials.Load(), "open calls make no connection attempt")
	assert.Len(t, clk.Sleeps(), slept, "open calls do not wait")

	// The service comes back on the same address; 10s later a probe closes
	// the breaker.
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv2 := &httptest.Server{Listener: l, Config: &http.Server{Handler: handler}}
	srv2.Start()
	defer srv2.Close()

	clk.Advance(10 * time.Second)
	code, err := call()
	require.NoError(t, err)
	assert.Equal(t, 200, code)
	assert.Equal(t, []string{addr + ":closed->open", addr + ":open->half-open", addr + ":half-open->closed"}, log.get())
}

func TestNewBreakerRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  BreakerConfig
		want string
	}{
		{BreakerConfig{ConsecutiveFailures: -1}, "ConsecutiveFailures -1 is negative"},
		{BreakerConfig{FailureRate: -0.1}, "FailureRate -0.1 is not in (0, 1]"},
		{BreakerConfig{FailureRate: 1.5}, "FailureRate 1.5"},
		{BreakerConfig{FailureRate: math.NaN()}, "FailureRate NaN"},
		{BreakerConfig{MinCalls: -5}, "MinCalls -5"},
		{BreakerConfig{Window: -time.Second}, "Window -1s"},
		{BreakerConfig{Buckets: -1}, "Buckets -1"},
		{BreakerConfig{Buckets: 1_000_000_000}, "Buckets 1000000000 is more than 1000"},
		{BreakerConfig{Window: 5 * time.Nanosecond, Buckets: 10}, "Window 5ns is too short for 10 buckets"},
		{BreakerConfig{OpenTimeout: -1}, "OpenTimeout -1ns"},
		{BreakerConfig{HalfOpenProbes: -2}, "HalfOpenProbes -2"},
		{BreakerConfig{MaxHold: -time.Minute}, "MaxHold -1m0s"},
	} {
		b, err := NewBreaker(tc.cfg)
		assert.Nil(t, b)
		assert.ErrorIs(t, err, ErrInvalidConfig, "%+v", tc.cfg)
		assert.ErrorContains(t, err, tc.want)

		bt, err := NewBreakerTransport(nil, tc.cfg)
		assert.Nil(t, bt)
		assert.ErrorContains(t, err, tc.want)

		_, err = NewTransport(nil, WithBreaker(tc.cfg))
		assert.ErrorIs(t, err, ErrInvalidConfig)
		assert.ErrorContains(t, err, "WithBreaker: ")
		assert.ErrorContains(t, err, tc.want)
	}
	_, err := NewBreaker(BreakerConfig{FailureRate: 1, Window: time.Minute, Buckets: 1000})
	assert.NoError(t, err, "the limits themselves are fine")
}

func TestBreakerTriggerModes(t *testing.T) {
	ctx := context.Background()
	trip := func(b *Breaker, clk *fakeClock, fails int) BreakerState {
		for range fails {
			_ = b.Execute(ctx, fail)
			clk.Advance(time.Millisecond)
		}
		return b.State()
	}
	// Zero config: 5 in a row.
	clk := newFakeClock()
	b := newTestBreaker(t, BreakerConfig{Clock: clk})
	assert.Equal(t, BreakerClosed, trip(b, clk, 4))
	assert.Equal(t, BreakerOpen, trip(b, clk, 1))

	// FailureRate alone: no consecutive trigger, only the rate after MinCalls.
	clk = newFakeClock()
	b = newTestBreaker(t, BreakerConfig{FailureRate: 0.9, MinCalls: 30, Clock: clk})
	assert.Equal(t, BreakerClosed, trip(b, clk, 29), "29 failures in a row, under MinCalls")
	assert.Equal(t, BreakerOpen, trip(b, clk, 1))

	// Both: whichever comes first.
	clk = newFakeClock()
	b = newTestBreaker(t, BreakerConfig{ConsecutiveFailures: 3, FailureRate: 0.9, MinCalls: 30, Clock: clk})
	assert.Equal(t, BreakerOpen, trip(b, clk, 3))
}
