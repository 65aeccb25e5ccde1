package redisslots

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
)

// Slots serve as the middleware's concurrency limit, one per tenant across
// the fleet: two requests of a tenant hold its two slots, a third is shed
// with 503, another tenant is untouched, and each slot comes back when its
// handler returns.
func TestSlotsAsConcurrency(t *testing.T) {
	s := newSlots(t, client(t), 2, prefix(t))
	mw, err := sluicehttp.New(admit.Config{Concurrency: s, ConcurrencyKey: admit.Header("X-Tenant")})
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			entered <- struct{}{}
			<-release
		}
	}))
	get := func(tenant string, hold bool) int {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-Tenant", tenant)
		if hold {
			req.Header.Set("X-Hold", "1")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { assert.Equal(t, http.StatusOK, get("acme", true)) })
		<-entered
	}
	assert.Equal(t, http.StatusServiceUnavailable, get("acme", false), "acme's two slots are held")
	assert.Equal(t, http.StatusOK, get("other", false), "another tenant's slots are its own")
	close(release)
	wg.Wait()
	assert.Equal(t, http.StatusOK, get("acme", false), "the slots came back when the handlers returned")
	n, err := s.InFlight(t.Context(), "acme")
	require.NoError(t, err)
	assert.Zero(t, n)
}

// Slots cannot say how many requests are in flight without a key, which
// AdvertiseConcurrency would publish: the engine refuses the pair.
func TestSlotsCannotBeAdvertised(t *testing.T) {
	s := newSlots(t, client(t), 2, prefix(t))
	_, err := admit.New(admit.Config{Concurrency: s, AdvertiseConcurrency: true})
	assert.ErrorContains(t, err, "SlotGauge")
}
