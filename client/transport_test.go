package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// drill3 is the reference's drill 3: base 200ms, cap 5s, max 4 attempts, 15s
// total deadline, full jitter, Retry-After as a floor. 500 is retried too.
func drill3(clk *fakeClock, extra ...Option) []Option {
	return append([]Option{
		WithBackoff(Backoff{Base: 200 * time.Millisecond, Cap: 5 * time.Second, Jitter: FullJitter}),
		WithMaxAttempts(4),
		WithDeadline(15 * time.Second),
		WithRetryStatuses(408, 429, 500, 502, 503, 504),
		WithClock(clk),
		WithRandSource(seeded()),
	}, extra...)
}

func get(t *testing.T, c *http.Client, url string) *http.Response {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestDrill3_429RetriedWithRetryAfterAsFloor(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk,
		answer{status: 429, header: map[string]string{"Retry-After": "2"}},
		answer{status: 429, header: map[string]string{"Retry-After": "1"}},
		answer{status: 429},
		answer{status: 200, body: "ok"},
	)
	var rec recorder
	// Without pacing, which would space the attempts to a host that keeps
	// answering 429 (TestTransportLearnsFromRepeated429s).
	c := &http.Client{Transport: newTransport(t, nil, drill3(clk, WithHooks(rec.hooks()), WithoutPacing())...)}

	resp := get(t, c, srv.URL)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "ok", readBody(t, resp))
	assert.Equal(t, 4, srv.Hits())

	sleeps := clk.Sleeps()
	require.Len(t, sleeps, 3)
	// Retry-After is a floor; the jitter on top is at most max(base, RA/10).
	assert.GreaterOrEqual(t, sleeps[0], 2*time.Second)
	assert.Less(t, sleeps[0], 2*time.Second+200*time.Millisecond)
	assert.GreaterOrEqual(t, sleeps[1], 1*time.Second)
	assert.Less(t, sleeps[1], 1*time.Second+200*time.Millisecond)
	// No Retry-After: full jitter under the third ceiling, 200ms × 2².
	assert.Less(t, sleeps[2], 800*time.Millisecond)

	require.Len(t, rec.retries, 3)
	for i, want := range []time.Duration{2 * time.Second, time.Second, 0} {
		e := rec.retries[i]
		assert.Equal(t, i+1, e.Attempt)
		assert.Equal(t, 429, e.StatusCode)
		assert.Equal(t, "429 Too Many Requests", e.Reason)
		assert.Equal(t, want, e.RetryAfter)
		assert.Equal(t, sleeps[i], e.Delay)
	}
	assert.Empty(t, rec.giveUps)
}

func TestDrill3_GivesUpAfterMaxAttemptsWithLastResponse(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk,
		answer{status: 503, body: "first"},
		answer{status: 503, body: "second"},
		answer{status: 503, body: "third"},
		answer{status: 503, body: "last"},
		answer{status: 200, body: "never reached"},
	)
	var rec recorder
	c := &http.Client{Transport: newTransport(t, nil, drill3(clk, WithHooks(rec.hooks()))...)}

	resp := get(t, c, srv.URL)
	assert.Equal(t, 4, srv.Hits(), "max 4 attempts")
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "last", readBody(t, resp), "the last response comes back undrained")

	sleeps := clk.Sleeps()
	require.Len(t, sleeps, 3)
	for i, ceiling := range []time.Duration{200, 400, 800} {
		assert.Less(t, sleeps[i], ceiling*time.Millisecond, "full jitter stays under the ceiling")
	}
	require.Len(t, rec.giveUps, 1)
	assert.ErrorIs(t, rec.giveUps[0].Cause, ErrMaxAttempts)
	assert.Equal(t, 4, rec.giveUps[0].Attempt)
}

func TestDrill3_500IsRetried(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 500}, answer{status: 500}, answer{status: 200, body: "ok"})
	c := &http.Client{Transport: newTransport(t, nil, drill3(clk)...)}

	resp := get(t, c, srv.URL)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, 3, srv.Hits())
	require.Len(t, clk.Sleeps(), 2)
	assert.Less(t, clk.Sleeps()[0], 200*time.Millisecond)
	assert.Less(t, clk.Sleeps()[1], 400*time.Millisecond)
}

func TestDrill3_400IsNeverRetried(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 409, 422} {
		clk := newFakeClock()
		srv := newScriptServer(t, clk, answer{status: code, body: "nope"}, answer{status: 200})
		var rec recorder
		c := &http.Client{Transport: newTransport(t, nil, drill3(clk, WithHooks(rec.hooks()))...)}

		resp := get(t, c, srv.URL)
		assert.Equal(t, code, resp.StatusCode)
		assert.Equal(t, "nope", readBody(t, resp))
		assert.Equal(t, 1, srv.Hits(), "status %d", code)
		assert.Empty(t, clk.Sleeps())
		assert.Empty(t, rec.retries)
		assert.Empty(t, rec.giveUps, "a 4xx is not a retryable failure")
	}
}

func TestDefaultStatusesDoNotInclude500(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 500}, answer{status: 200})
	c := &http.Client{Transport: newTransport(t, nil, WithClock(clk))}
	assert.Equal(t, 500, get(t, c, srv.URL).StatusCode)
	assert.Equal(t, 1, srv.Hits())

	for _, code := range []int{408, 429, 503} {
		srv := newScriptServer(t, clk, answer{status: code}, answer{status: 200})
		c := &http.Client{Transport: newTransport(t, nil, WithClock(clk))}
		assert.Equal(t, 200, get(t, c, srv.URL).StatusCode, "status %d", code)
		assert.Equal(t, 2, srv.Hits())
	}
}

func TestDrill3_RetryAfterBeyondDeadlineOrCapSurfacesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		retryAfter string
		cause      error
	}{
		{"20", ErrDeadline},             // under the 30s cap, over the 15s deadline
		{"45", ErrRetryAfterTooLong},    // over the cap
		{"86400", ErrRetryAfterTooLong}, // a day: plausible, and far over the cap
	} {
		clk := newFakeClock()
		srv := newScriptServer(t, clk, answer{status: 429, header: map[string]string{"Retry-After": tc.retryAfter}}, answer{status: 200})
		var rec recorder
		c := &http.Client{Transport: newTransport(t, nil, drill3(clk, WithHooks(rec.hooks()))...)}

		resp := get(t, c, srv.URL)
		assert.Equal(t, 429, resp.StatusCode)
		assert.Equal(t, 1, srv.Hits())
		assert.Empty(t, clk.Sleeps(), "never sleeps past the deadline")
		require.Len(t, rec.giveUps, 1)
		assert.ErrorIs(t, rec.giveUps[0].Cause, tc.cause, tc.retryAfter)
	}
}

func TestMalformedOrAbsurdRetryAfterIsIgnored(t *testing.T) {
	for _, ra := range []string{"-5", "1.5", "soon", "99999999999999999999", "1772366400", "Fri, 31 Dec 9999 23:59:59 GMT"} {
		clk := newFakeClock()
		srv := newScriptServer(t, clk, answer{status: 503, header: map[string]string{"Retry-After": ra}}, answer{status: 200})
		var rec recorder
		c := &http.Client{Transport: newTransport(t, nil, drill3(clk, WithHooks(rec.hooks()))...)}

		resp := get(t, c, srv.URL)
		assert.Equal(t, 200, resp.StatusCode, ra)
		assert.Equal(t, 2, srv.Hits(), ra)
		require.Len(t, rec.retries, 1, ra)
		assert.Zero(t, rec.retries[0].RetryAfter, ra)
		assert.Less(t, rec.retries[0].Delay, 200*time.Millisecond, "%s: plain backoff", ra)
	}
}

func TestDrill3_SleepThatWouldCrossTheDeadlineIsNotTaken(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 503, header: map[string]string{"Retry-After": "6"}})
	var rec recorder
	c := &http.Client{Transport: newTransport(t, nil, drill3(clk, WithHooks(rec.hooks()))...)}

	resp := get(t, c, srv.URL)
	assert.Equal(t, 503, resp.StatusCode)
	// t=0, t≈6.x, t≈12.x; the next 6s wait would end past 15s.
	assert.Equal(t, 3, srv.Hits())
	assert.Less(t, clk.Now().Sub(epoch), 15*time.Second)
	require.Len(t, rec.giveUps, 1)
	assert.ErrorIs(t, rec.giveUps[0].Cause, ErrDeadline)
}

// deadlineOnly has a deadline but is never done, so that a test can give
// the transport a context deadline to plan its waits around without the
// run's real speed deciding anything: a slow run cannot make it expire.
type deadlineOnly struct {
	context.Context
	at time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.at, true }

func TestContextDeadlineBoundsWaits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration // from now, in real time
		status   int
		sleeps   int
	}{
		{"a 3s wait cannot fit in 2s", 2 * time.Second, 429, 0},
		{"it fits in a year", 365 * 24 * time.Hour, 200, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			var hits atomic.Int32
			// No network: a dial would use the context's deadline itself.
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				status, h := 200, http.Header{}
				if hits.Add(1) == 1 {
					status = 429
					h.Set("Retry-After", "3")
				}
				return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
			})
			c := &http.Client{Transport: newTransport(t, base, WithClock(clk), WithDeadline(0))}
			ctx := deadlineOnly{context.Background(), time.Now().Add(tc.deadline)}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/", nil)
			resp, err := c.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.EqualValues(t, tc.sleeps+1, hits.Load())
			assert.Len(t, clk.Sleeps(), tc.sleeps)
		})
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	formats := map[string]func(time.Time) string{
		"IMF-fixdate": func(t time.Time) string { return t.Format(http.TimeFormat) },
		"RFC 850":     func(t time.Time) string { return t.Format("Monday, 02-Jan-06 15:04:05 GMT") },
		"asctime":     func(t time.Time) string { return t.Format(time.ANSIC) },
	}
	for name, format := range formats {
		t.Run(name, func(t *testing.T) {
			clk := newFakeClock()
			srv := newScriptServer(t, clk,
				answer{status: 503, header: map[string]string{"Retry-After": format(epoch.Add(4 * time.Second))}},
				answer{status: 200})
			c := &http.Client{Transport: newTransport(t, nil, drill3(clk)...)}

			assert.Equal(t, 200, get(t, c, srv.URL).StatusCode)
			require.Len(t, clk.Sleeps(), 1)
			assert.GreaterOrEqual(t, clk.Sleeps()[0], 4*time.Second, "never earlier than asked")
			assert.Less(t, clk.Sleeps()[0], 4*time.Second+400*time.Millisecond)
		})
	}
}

func TestPostIsNotRetriedWithoutIdempotencyKey(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 503, body: "busy"}, answer{status: 200, body: "ok"})
	c := &http.Client{Transport: newTransport(t, nil, drill3(clk)...)}

	resp, err := c.Post(srv.URL, "text/plain", strings.NewReader("payload"))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, 1, srv.Hits())
	assert.Empty(t, clk.Sleeps())

	// PATCH is not idempotent either.
	req, _ := http.NewRequest(http.MethodPatch, srv.URL, strings.NewReader("x"))
	srv2 := newScriptServer(t, clk, answer{status: 503}, answer{status: 200})
	req.URL.Host = strings.TrimPrefix(srv2.URL, "http://")
	resp2, err := c.Do(req)
	require.NoError(t, err)
	defer resp2.Body.Close()
	assert.Equal(t, 1, srv2.Hits())
}

func TestPostWithIdempotencyKeyIsRetriedWithTheSameBody(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 503}, answer{status: 429}, answer{status: 200, body: "ok"})
	c := &http.Client{Transport: newTransport(t, nil, drill3(clk)...)}

	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("payload"))
	req.Header.Set("Idempotency-Key", "8e03978e-40d5-43e8-bc93-6894a57f9324")
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, []string{"payload", "payload", "payload"}, srv.Bodies())
}

func TestIdempotentMethodsAreRetried(t *testing.T) {
	for _, m := range []string{"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"} {
		clk := newFakeClock()
		srv := newScriptServer(t, clk, answer{status: 503}, answer{status: 200})
		c := &http.Client{Transport: newTransport(t, nil, drill3(clk)...)}
		req, _ := http.NewRequest(m, srv.URL, nil)
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode, m)
		assert.Equal(t, 2, srv.Hits(), m)
	}
}

// trackedBody is a request body without GetBody that records Close.
type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error { b.closed.Store(true); return nil }

func TestBodyWithoutGetBodyIsBufferedAndReplayed(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 503}, answer{status: 503}, answer{status: 200})
	c := &http.Client{Transport: newTransport(t, nil, drill3(clk)...)}

	body := &trackedBody{Reader: strings.NewReader(strings.Repeat("x", 1000))}
	req, _ := http.NewRequest(http.MethodPut, srv.URL, nil)
	req.Body, req.ContentLength = body, -1 // unknown length, no GetBody
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	want := strings.Repeat("x", 1000)
	assert.Equal(t, []string{want, want, want}, srv.Bodies())
	assert.True(t, body.closed.Load(), "the caller's body is closed")
	assert.Nil(t, req.GetBody, "the caller's request is not modified")
	assert.Same(t, body, req.Body)
}

func TestBodyLargerThanBufferIsSentOnceAndNotRetried(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 503}, answer{status: 200})
	c := &http.Client{Transport: newTransport(t, nil, drill3(clk, WithMaxBodyBuffer(16))...)}

	payload := strings.Repeat("y", 100)
	body := &trackedBody{Reader: strings.NewReader(payload)}
	req, _ := http.NewRequest(http.MethodPut, srv.URL, nil)
	req.Body, req.ContentLength = body, -1
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, []string{payload}, srv.Bodies(), "sent whole, once")
	assert.True(t, body.closed.Load())

	// A known length over the limit is not even read ahead.
	req2, _ := http.NewRequest(http.MethodPut, srv.URL, bytes.NewReader(make([]byte, 100)))
	req2.GetBody = nil
	resp2, err := c.Do(req2)
	require.NoError(t, err)
	resp2.Body.Close()
}

func TestGetBodyFailureStopsRetries(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 503, body: "busy"}, answer{status: 200})
	var rec recorder
	c := &http.Client{Transport: newTransport(t, nil, drill3(clk, WithHooks(rec.hooks()))...)}
	req, _ := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader("abc"))
	req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("gone") }
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "busy", readBody(t, resp))
	assert.Equal(t, 1, srv.Hits())
	require.Len(t, rec.giveUps, 1)
	assert.ErrorContains(t, rec.giveUps[0].Cause, "gone")
}

func TestCancellationMidSleep(t *testing.T) {
	clk := newFakeClock()
	clk.block = true
	clk.sleeping = make(chan time.Duration, 1)
	srv := newScriptServer(t, clk, answer{status: 503, header: map[string]string{"Retry-After": "10"}}, answer{status: 200})
	var calls atomic.Int32
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})
	// Without pacing, whose own ctx-aware wait would hide a retry loop that
	// ignored the cancellation.
	c := &http.Client{Transport: newTransport(t, base, drill3(clk, WithoutPacing())...)}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	done := doAsync(c, req)
	assert.GreaterOrEqual(t, await(t, clk.sleeping, "the transport's wait"), 10*time.Second)
	cancel()
	assert.ErrorIs(t, await(t, done, "the end of the cancelled wait"), context.Canceled)
	assert.Equal(t, 1, srv.Hits())
	assert.EqualValues(t, 1, calls.Load(), "stops at once: no further attempt")
}

func TestCancelledContextIsNotRetried(t *testing.T) {
	clk := newFakeClock()
	var calls atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		cancel()
		return nil, r.Context().Err()
	})
	c := &http.Client{Transport: newTransport(t, base, drill3(clk)...)}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://example.test/", nil)
	_, err := c.Do(req)
	assert.ErrorIs(t, err, context.Canceled)
	assert.EqualValues(t, 1, calls.Load())
	assert.Empty(t, clk.Sleeps())
}

// doneWatch reports when its Done channel is first asked for: a Sleep
// that waits on the context has started to.
type doneWatch struct {
	context.Context
	once  sync.Once
	asked chan struct{}
}

func (c *doneWatch) Done() <-chan struct{} {
	c.once.Do(func() { close(c.asked) })
	return c.Context.Done()
}

func TestSystemClockSleepStopsOnCancel(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	ctx := &doneWatch{Context: parent, asked: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- sleep(ctx, core.SystemClock{}, time.Hour) }()
	// Cancel mid-sleep, not before it starts (its first check would see it).
	await(t, ctx.asked, "the Sleep waiting on its context")
	cancel()
	assert.ErrorIs(t, await(t, done, "the end of the cancelled Sleep"), context.Canceled)
	assert.NoError(t, sleep(context.Background(), core.SystemClock{}, 0))
	assert.ErrorIs(t, sleep(ctx, core.SystemClock{}, 0), context.Canceled)
	assert.NoError(t, sleep(context.Background(), core.SystemClock{}, time.Microsecond))
}

// transportErr builds the error net/http returns for a failed connection.
func transportErr(errno syscall.Errno) error {
	return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", errno)}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestTransientTransportErrorsAreRetried(t *testing.T) {
	clk := newFakeClock()
	errs := []error{transportErr(syscall.ECONNRESET), timeoutErr{}, io.ErrUnexpectedEOF}
	var calls atomic.Int32
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		n := int(calls.Add(1))
		if n <= len(errs) {
			return nil, errs[n-1]
		}
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})
	var rec recorder
	c := &http.Client{Transport: newTransport(t, base, drill3(clk, WithHooks(rec.hooks()))...)}
	resp := get(t, c, "http://example.test/")
	assert.Equal(t, 200, resp.StatusCode)
	assert.EqualValues(t, 4, calls.Load())
	require.Len(t, rec.retries, 3)
	assert.Equal(t, "connection reset", rec.retries[0].Reason)
	assert.Equal(t, "timeout", rec.retries[1].Reason)
	assert.Equal(t, "connection closed", rec.retries[2].Reason)
}

func TestExhaustedTransportErrorsReturnRetryError(t *testing.T) {
	clk := newFakeClock()
	var calls atomic.Int32
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		return nil, transportErr(syscall.ECONNREFUSED)
	})
	c := &http.Client{Transport: newTransport(t, base, drill3(clk, WithoutBreaker())...)}
	_, err := c.Get("http://example.test/")
	require.Error(t, err)
	var re *RetryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 4, re.Attempts)
	assert.ErrorIs(t, err, ErrMaxAttempts)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "the last cause is kept")
	assert.EqualValues(t, 4, calls.Load())
}

func TestPermanentTransportErrorIsNotRetried(t *testing.T) {
	clk := newFakeClock()
	var calls atomic.Int32
	permanent := errors.New("x509: certificate signed by unknown authority")
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		return nil, permanent
	})
	c := &http.Client{Transport: newTransport(t, base, drill3(clk)...)}
	_, err := c.Get("http://example.test/")
	assert.ErrorIs(t, err, permanent)
	var re *RetryError
	assert.False(t, errors.As(err, &re))
	assert.EqualValues(t, 1, calls.Load())
}

func TestRetryBudgetCapsRetriesDuringLongOutage(t *testing.T) {
	run := func(budget *RetryBudget) int {
		clk := newFakeClock()
		srv := newScriptServer(t, clk, answer{status: 503})
		c := &http.Client{Transport: newTransport(t, nil, drill3(clk, WithRetryBudget(budget), WithoutBreaker())...)}
		for range 200 {
			resp := get(t, c, srv.URL)
			assert.Equal(t, 503, resp.StatusCode)
		}
		return srv.Hits()
	}
	without := run(nil)
	with := run(newBudget(t, 10, 0.1))
	assert.Equal(t, 800, without, "4 attempts each")
	// The first request spends tokens 10→6 on its 4 attempts, the second
	// takes the bucket to 5 (not > half): from then on, one attempt each.
	assert.Equal(t, 4+199, with)
}

func TestRetryBudgetRefillsAfterRecovery(t *testing.T) {
	clk := newFakeClock()
	var healthy atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !healthy.Load() {
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	budget := newBudget(t, 10, 0.1)
	c := &http.Client{Transport: newTransport(t, nil, drill3(clk, WithRetryBudget(budget), WithoutBreaker())...)}
	for range 20 {
		get(t, c, srv.URL)
	}
	assert.False(t, budget.CanRetry())
	healthy.Store(true)
	for range 60 {
		get(t, c, srv.URL)
	}
	assert.True(t, budget.CanRetry(), "successes refill the bucket")
}

func TestDiscardedBodiesAreDrainedSoConnectionsAreReused(t *testing.T) {
	var conns atomic.Int32
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) < 4 {
			w.WriteHeader(429)
			_, _ = w.Write(bytes.Repeat([]byte("z"), 8<<10))
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	clk := newFakeClock()
	c := &http.Client{Transport: newTransport(t, base, drill3(clk)...)}
	resp := get(t, c, srv.URL)
	assert.Equal(t, "ok", readBody(t, resp))
	assert.EqualValues(t, 4, hits.Load())
	assert.EqualValues(t, 1, conns.Load(), "one connection for all four attempts")
}

func TestOpenBreakerStopsRetriesAndKeepsLastResponse(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 503, body: "down"})
	var rec recorder
	c := &http.Client{Transport: newTransport(t, nil, drill3(clk,
		WithBreaker(BreakerConfig{ConsecutiveFailures: 2, OpenTimeout: time.Minute}),
		WithHooks(rec.hooks()))...)}

	resp := get(t, c, srv.URL)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "down", readBody(t, resp))
	assert.Equal(t, 2, srv.Hits(), "the second failure opened the breaker: no third attempt")
	require.Len(t, rec.giveUps, 1)
	assert.ErrorIs(t, rec.giveUps[0].Cause, ErrCircuitOpen)

	_, err := c.Get(srv.URL)
	var oe *CircuitOpenError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, strings.TrimPrefix(srv.URL, "http://"), oe.Name)
	assert.Equal(t, 2, srv.Hits(), "an open breaker makes no call")
}

func TestTransportIsSafeForConcurrentUse(t *testing.T) {
	clk := newFakeClock()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Policy", `"p";q=1000;w=60`)
		w.Header().Set("RateLimit", `"p";r=500;t=30`)
		if n.Add(1)%3 == 0 {
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	c := &http.Client{Transport: newTransport(t, nil, WithClock(clk), WithBreaker(BreakerConfig{ConsecutiveFailures: 1000}))}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				resp, err := c.Get(srv.URL)
				if assert.NoError(t, err) {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	assert.GreaterOrEqual(t, int(n.Load()), 200)
}

func TestNewTransportDefaults(t *testing.T) {
	tr := newTransport(t, nil)
	assert.Same(t, http.DefaultTransport, tr.base)
	assert.Equal(t, DefaultMaxAttempts, tr.maxAttempts)
	assert.Equal(t, DefaultDeadline, tr.deadline)
	assert.Equal(t, Backoff{Base: DefaultBackoffBase, Multiplier: 2, Cap: DefaultBackoffCap}, tr.backoff)
	assert.NotNil(t, tr.budget)
	assert.NotNil(t, tr.breakers)
	assert.NotNil(t, tr.pacer)
	for code, want := range map[int]bool{408: true, 429: true, 503: true, 500: false, 502: false, 404: false} {
		assert.Equal(t, want, tr.retryStatus.has(code), code)
	}
	bare := newTransport(t, nil, WithoutBreaker(), WithoutPacing(), WithRetryBudget(nil), WithMaxAttempts(1))
	assert.Nil(t, bare.breakers)
	assert.Nil(t, bare.pacer)
	assert.Nil(t, bare.budget)
	assert.Equal(t, 1, bare.maxAttempts)
}

func TestNewTransportRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  Option
		want string
	}{
		{WithMaxAttempts(0), "WithMaxAttempts(0): at least 1 attempt is needed"},
		{WithMaxAttempts(-3), "WithMaxAttempts(-3)"},
		{WithDeadline(-time.Second), "WithDeadline(-1s): negative"},
		{WithMaxRetryAfter(-1), "WithMaxRetryAfter(-1ns): negative"},
		{WithMaxBodyBuffer(-1), "WithMaxBodyBuffer(-1): negative"},
		{WithRetryStatuses(503, 400), "WithRetryStatuses: 400 is not retryable"},
		{WithRetryStatuses(200), "WithRetryStatuses: 200"},
		{WithRetryStatuses(600), "WithRetryStatuses: 600"},
		{WithIdempotencyKeyHeader(""), `WithIdempotencyKeyHeader: "" is not a header field name`},
		{WithIdempotencyKeyHeader("Idempotency Key"), `"Idempotency Key"`},
		{WithBackoff(Backoff{Jitter: 9}), "WithBackoff: client: invalid configuration: Backoff.Jitter 9"},
		{WithBackoff(Backoff{Multiplier: 0.5}), "Backoff.Multiplier 0.5"},
		{WithPacing(PacingConfig{BurstFraction: 1.5}), "WithPacing: client: invalid configuration: PacingConfig.BurstFraction 1.5"},
		{WithPacing(PacingConfig{BurstFraction: math.NaN()}), "PacingConfig.BurstFraction NaN"},
		{WithPacing(PacingConfig{BurstFraction: -0.1}), "PacingConfig.BurstFraction -0.1"},
		{WithPacing(PacingConfig{MaxDelay: -1}), "PacingConfig.MaxDelay -1ns"},
		{WithPacing(PacingConfig{MaxHosts: -1}), "PacingConfig.MaxHosts -1"},
		{WithBreaker(BreakerConfig{HalfOpenProbes: -1}), "WithBreaker: client: invalid configuration: BreakerConfig.HalfOpenProbes -1"},
		{WithClock(nil), "WithClock(nil)"},
		{WithRandSource(nil), "WithRandSource(nil)"},
		{nil, "option 0 of NewTransport is nil"},
	} {
		tr, err := NewTransport(nil, tc.opt)
		assert.Nil(t, tr, tc.want)
		assert.ErrorIs(t, err, ErrInvalidConfig, tc.want)
		assert.ErrorContains(t, err, tc.want)
	}

	// All the problems at once, so that fixing one does not reveal the next.
	_, err := NewTransport(nil, WithMaxAttempts(0), WithDeadline(-1), nil)
	assert.ErrorContains(t, err, "WithMaxAttempts(0)")
	assert.ErrorContains(t, err, "WithDeadline(-1ns)")
	assert.ErrorContains(t, err, "option 2 of NewTransport is nil")

	// The boundaries themselves are valid.
	_, err = NewTransport(nil, WithMaxAttempts(1), WithDeadline(0), WithMaxRetryAfter(0), WithMaxBodyBuffer(0),
		WithRetryStatuses(), WithRetryStatuses(408, 429, 500, 599), WithIdempotencyKeyHeader(),
		WithPacing(PacingConfig{BurstFraction: 1}), WithBreaker(BreakerConfig{FailureRate: 1}))
	assert.NoError(t, err)
}

func TestRetryStatusesCanBeEmpty(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 503}, answer{status: 200})
	c := &http.Client{Transport: newTransport(t, nil, drill3(clk, WithRetryStatuses())...)}
	assert.Equal(t, 503, get(t, c, srv.URL).StatusCode, "no status is retried")
	assert.Equal(t, 1, srv.Hits())
}

func TestBrokenRequestsAndBaseTransportsAreErrorsNotPanics(t *testing.T) {
	nilNil := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil })
	tr := newTransport(t, nilNil, WithClock(newFakeClock()))
	req, _ := http.NewRequest(http.MethodGet, "http://example.test/", nil)
	_, err := tr.RoundTrip(req)
	assert.ErrorContains(t, err, "nil *Response with a nil error")

	body := &trackedBody{Reader: strings.NewReader("x")}
	_, err = tr.RoundTrip(&http.Request{Method: http.MethodPut, Body: body})
	assert.ErrorContains(t, err, "nil Request.URL")
	assert.True(t, body.closed.Load(), "the body is closed even then")

	bt := newBreakerTransport(t, nilNil, BreakerConfig{})
	_, err = bt.RoundTrip(req)
	assert.ErrorContains(t, err, "nil *Response with a nil error")
	_, err = bt.RoundTrip(&http.Request{})
	assert.ErrorContains(t, err, "nil Request.URL")
}

func TestCallerCancellationNeverCountsAgainstTheBreaker(t *testing.T) {
	clk := newFakeClock()
	var log stateLog
	// The caller cancels mid-attempt and the base transport reports it as a
	// broken connection, not as context.Canceled.
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return nil, io.ErrUnexpectedEOF
	})
	tr := newTransport(t, base, drill3(clk, WithBreaker(BreakerConfig{ConsecutiveFailures: 1, OnStateChange: log.hook}))...)
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://example.test/", nil)
		_, err := tr.RoundTrip(req)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	}
	assert.Empty(t, log.get(), "the breaker stayed closed")

	// The same error without a cancellation is a failure.
	req, _ := http.NewRequest(http.MethodGet, "http://example.test/", nil)
	_, err := tr.RoundTrip(req)
	assert.ErrorIs(t, err, ErrCircuitOpen, "the first failure opened it and stopped the retries")
	assert.Equal(t, []string{"example.test:closed->open"}, log.get())
}

// endlessBody is a response body that never ends, counting what is read.
type endlessBody struct {
	read   atomic.Int64
	closed atomic.Bool
}

func (b *endlessBody) Read(p []byte) (int, error) {
	b.read.Add(int64(len(p)))
	return len(p), nil
}

func (b *endlessBody) Close() error { b.closed.Store(true); return nil }

func TestDiscardedBodiesAreDrainedBoundedAndClosed(t *testing.T) {
	clk := newFakeClock()
	var bodies []*endlessBody
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		b := &endlessBody{}
		bodies = append(bodies, b)
		return &http.Response{StatusCode: 503, Header: http.Header{}, Body: b, Request: r}, nil
	})
	tr := newTransport(t, base, drill3(clk, WithMaxAttempts(3), WithoutBreaker())...)
	req, _ := http.NewRequest(http.MethodGet, "http://example.test/", nil)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	require.Len(t, bodies, 3)
	for _, b := range bodies[:2] {
		assert.True(t, b.closed.Load(), "a retried response's body is closed")
		assert.LessOrEqual(t, b.read.Load(), int64(maxDrain), "and drained only so far")
		assert.Positive(t, b.read.Load())
	}
	assert.Same(t, bodies[2], resp.Body, "the last one is returned unread")
	assert.False(t, bodies[2].closed.Load())
	assert.Zero(t, bodies[2].read.Load())
}
