//go:build !race

// The race detector makes sync.Pool drop items at random, so these counts
// hold only without it.

package sluicehttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/httplimit/httplimittest"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// A concurrency limit costs a request no allocation: the writer that
// records its status and its settlement are pooled.
func TestSlotAllocatesNothing(t *testing.T) {
	roomy := core.MustPolicy(core.PolicyConfig{Name: "roomy", Algorithm: core.TokenBucket, Quota: 1_000_000, Period: time.Second, Burst: 1 << 30})
	perRequest := func(slots admit.Slots) float64 {
		mw, err := sluicehttp.New(admit.Config{
			Limiter:     httplimittest.NewEnv(t).Limiter(t, nil),
			Rules:       []admit.Rule{{Policy: roomy, Key: admit.ClientIP()}},
			Concurrency: slots,
		})
		require.NoError(t, err)
		h := mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = "198.51.100.7:52000"
		w := &discard{h: http.Header{}}
		return testing.AllocsPerRun(100, func() {
			clear(w.h)
			h.ServeHTTP(w, req)
		})
	}
	slots, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(4)})
	require.NoError(t, err)
	assert.Equal(t, perRequest(nil), perRequest(slots))
	assert.Zero(t, slots.InFlight())
}

// discard is a ResponseWriter that keeps nothing but its header.
type discard struct{ h http.Header }

func (w *discard) Header() http.Header         { return w.h }
func (w *discard) Write(p []byte) (int, error) { return len(p), nil }
func (w *discard) WriteHeader(int)             {}
