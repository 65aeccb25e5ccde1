package sluicetest_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
)

// These are a user's tests of their own handlers behind sluice: a manual
// clock, a store the test can break and reset, and the fields read as a
// client reads them. Nothing sleeps: time moves when the test moves it.

var start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// perIP is 5 requests a minute per client, a GCRA bucket of 5.
var perIP = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 5, Period: time.Minute, Burst: 5})

func hello(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello\n") }

// The net/http service: every client IP limited; the store fails closed.
func newService(t *testing.T, clock core.Clock, store core.Store) http.Handler {
	limiter, err := core.NewLimiter(store, core.WithFailClosed(0))
	require.NoError(t, err)
	mw, err := sluicehttp.New(admit.Config{
		Limiter: limiter,
		Rules:   []admit.Rule{{Policy: perIP, Key: admit.ClientIP()}},
		Clock:   clock,
	})
	require.NoError(t, err)
	return mw(http.HandlerFunc(hello))
}

func get(h http.Handler, remote string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = remote
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestNetHTTPService(t *testing.T) {
	clock := sluicetest.NewManualClock(start)
	store := sluicetest.NewStore(clock)
	h := newService(t, clock, store)
	const ann, bob = "203.0.113.7:1234", "198.51.100.9:1234"

	for want := int64(4); want >= 0; want-- {
		rec := get(h, ann)
		require.Equal(t, http.StatusOK, rec.Code)
		sluicetest.AssertRemaining(t, rec, "per-ip", want)
	}
	rec := get(h, ann)
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)
	sluicetest.AssertRetryAfter(t, rec, 12) // one unit every 12 s
	sluicetest.AssertRemaining(t, get(h, bob), "per-ip", 4)

	clock.Advance(12 * time.Second)
	sluicetest.AssertRemaining(t, get(h, ann), "per-ip", 0)

	// A reset client starts afresh; the others keep their standing.
	require.NoError(t, store.ResetKey(context.Background(), "203.0.113.7"))
	sluicetest.AssertRemaining(t, get(h, ann), "per-ip", 4)
	sluicetest.AssertRemaining(t, get(h, bob), "per-ip", 4) // its unit of 0 s refilled at 12 s

	// The store goes down: the service fails closed, 503 with Retry-After,
	// and comes back with the store, whose state is as it was.
	store.Fail(nil)
	rec = get(h, ann)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	sluicetest.AssertRetryAfter(t, rec, 1)
	store.Recover()
	sluicetest.AssertRemaining(t, get(h, ann), "per-ip", 3)
}
