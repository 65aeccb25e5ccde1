package admit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

var perIP = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})

// samples is a backpressure.Controller with a fixed limit that records what
// the Limiter learns from each request: a request reported Ignored teaches
// it nothing, and is not recorded.
type samples struct {
	limit int
	got   []backpressure.Sample
}

func (s *samples) Limit() int { return s.limit }

func (s *samples) Update(x backpressure.Sample) int {
	s.got = append(s.got, x)
	return s.limit
}

// What a request's end says about load: a deadline passed or a 503/504
// says the service is overloaded; a panic or a client gone says nothing; any
// other answer, 500 included, is a success whose latency counts.
func TestSettlementReportsHowTheRequestWent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		end     error // the request context's error once the handler has returned
		learned bool  // the algorithm saw the request
		dropped bool
	}{
		{"200", http.StatusOK, nil, true, false},
		{"500", http.StatusInternalServerError, nil, true, false},
		{"503", http.StatusServiceUnavailable, nil, true, true},
		{"504", http.StatusGatewayTimeout, nil, true, true},
		{"panic", 0, nil, false, false},
		{"client gone", http.StatusOK, context.Canceled, false, false},
		{"deadline passed", http.StatusOK, context.DeadlineExceeded, true, true},
		{"deadline passed, then a panic", 0, context.DeadlineExceeded, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alg := &samples{limit: 4}
			slots, err := backpressure.New(backpressure.Config{Controller: alg})
			require.NoError(t, err)
			m, err := New(Config{Concurrency: slots})
			require.NoError(t, err)
			ctx := &ending{Context: context.Background()}
			_, v := decideHTTP(m, &nopWriter{h: http.Header{}}, httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil), "/", nil)
			require.True(t, v.Proceed)
			require.NotNil(t, v.Settlement)
			assert.Nil(t, v.Reservation)
			assert.Equal(t, 1, slots.InFlight())
			ctx.err = tc.end
			v.Settlement.Settle(tc.status)
			assert.Zero(t, slots.InFlight())
			if !tc.learned {
				assert.Empty(t, alg.got)
				return
			}
			require.Len(t, alg.got, 1)
			assert.Equal(t, tc.dropped, alg.got[0].Dropped)
		})
	}
}

// ending is a request context that ends when the test sets its error.
type ending struct {
	context.Context
	err error
}

func (c *ending) Err() error { return c.err }

// A request the concurrency limit sheds is answered 503 through the same
// fields and hook as a denial; its rate fields show the rules allowed it.
func TestShedAnswer(t *testing.T) {
	slots, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(1)})
	require.NoError(t, err)
	held, err := slots.Acquire(context.Background(), "", core.Default)
	require.NoError(t, err)
	defer held.Release()
	l, err := core.NewLimiter(instantStore{})
	require.NoError(t, err)
	var seen Denial
	m, err := New(Config{Limiter: l, Rules: []Rule{{Policy: perIP, Key: ClientIP()}}, Concurrency: slots,
		Deny: func(r *Request, d *Denial) Response {
			seen = *d
			return Response{Status: d.Status}
		}})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	_, v := decideHTTP(m, rec, httptest.NewRequest(http.MethodGet, "/", nil), "/", nil)
	assert.False(t, v.Proceed)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	assert.Equal(t, `"per-ip";r=9;t=1`, rec.Header().Get("RateLimit"))
	require.NotNil(t, seen.Shed)
	assert.Equal(t, backpressure.Saturated, seen.Shed.Reason)
	assert.True(t, seen.Decision.Allowed, "the rules' decision")
	assert.Equal(t, perIP, seen.Decision.Policy)
	assert.Empty(t, slices.Collect(seen.Violated()))
}

// A request whose context ends while it waits for a slot is answered a
// bare 503: its client is gone.
func TestGoneWhileWaiting(t *testing.T) {
	slots, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(1), Queue: 1, MaxWait: time.Hour})
	require.NoError(t, err)
	held, err := slots.Acquire(context.Background(), "", core.Default)
	require.NoError(t, err)
	defer held.Release()
	m, err := New(Config{Concurrency: slots})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	rec := httptest.NewRecorder()
	done := make(chan bool)
	go func() {
		_, v := decideHTTP(m, rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil), "/", nil)
		done <- v.Proceed
	}()
	require.Eventually(t, func() bool { return slots.Waiting() == 1 }, 10*time.Second, time.Millisecond)
	cancel()
	assert.False(t, <-done)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Empty(t, rec.Body.String())
	assert.Empty(t, rec.Header().Get("Retry-After"))
	assert.Zero(t, slots.Waiting())
	assert.Equal(t, 1, slots.InFlight(), "the held slot alone")
}

// Under Config.Estimates, a request holding a slot still finds its
// reservation in the context its handler sees.
func TestSlotWithReservation(t *testing.T) {
	slots, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(1)})
	require.NoError(t, err)
	l, err := core.NewLimiter(instantStore{})
	require.NoError(t, err)
	m, err := New(Config{Limiter: l, Rules: []Rule{{Policy: perIP, Key: ClientIP()}}, Estimates: true, Concurrency: slots})
	require.NoError(t, err)
	r, v := decideHTTP(m, &nopWriter{h: http.Header{}}, httptest.NewRequest(http.MethodGet, "/", nil), "/", nil)
	require.True(t, v.Proceed)
	require.NotNil(t, v.Reservation)
	assert.Same(t, v.Reservation, ReservationFrom(r.Context()))
	require.NotNil(t, v.Settlement)
	assert.Equal(t, 1, slots.InFlight())
	require.NoError(t, v.Reservation.Reconcile(r.Context(), 1))
	v.Settlement.Settle(http.StatusOK)
	assert.Zero(t, slots.InFlight())
}
