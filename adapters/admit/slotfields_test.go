package admit

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
)

// Behind another sluice middleware, the concurrency item follows the items
// every middleware on the path set: the earlier one's, then this one's rules'.
func TestAdvertiseConcurrencyComposesWithStackedFields(t *testing.T) {
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	limiter, err := core.NewLimiter(store, core.WithClock(clock))
	require.NoError(t, err)
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 10, Period: 5 * time.Second, Burst: 10})
	free := core.MustPolicy(core.PolicyConfig{Name: "free", Algorithm: core.GCRA, Quota: 2, Period: time.Minute, Burst: 2})
	slots, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(4)})
	require.NoError(t, err)
	byIP, err := New(Config{Limiter: limiter, Clock: clock, Rules: []Rule{{Policy: perIP, Key: ClientIP()}}})
	require.NoError(t, err)
	byPlan, err := New(Config{Limiter: limiter, Clock: clock, Rules: []Rule{{Policy: free, Key: Header("X-Api-Key")}},
		Concurrency: slots, AdvertiseConcurrency: true})
	require.NoError(t, err)

	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/items", nil)
	req.Header.Set("X-Api-Key", "k1")
	_, v1 := decideHTTP(byIP, rec, req, "/items", nil)
	require.True(t, v1.Proceed)
	_, v2 := decideHTTP(byPlan, rec, req, "/items", nil)
	require.True(t, v2.Proceed)
	defer v2.Settlement.Settle(http.StatusOK)

	assert.Equal(t, `"per-ip";q=10;w=5, "free";q=2;w=60, "concurrency";q=4;qu="concurrent-requests"`, rec.Header().Get("RateLimit-Policy"))
	assert.Equal(t, `"per-ip";r=9;t=1, "free";r=1;t=30, "concurrency";r=3;t=0`, rec.Header().Get("RateLimit"))
}
