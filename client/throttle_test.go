package client

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestThrottleRejectsWithTheBooksProbability(t *testing.T) {
	th := newThrottle(ThrottleConfig{K: 2}.withDefaults())
	assert.False(t, th.reject("h", epoch, 0), "nothing answered yet: nothing rejected")
	// 10 answers, 3 accepted: p = (10 - 2·3) / 11 = 4/11.
	for i := range 10 {
		th.answered("h", epoch, i < 3)
	}
	p := 4.0 / 11
	assert.True(t, th.reject("h", epoch, p-0.01))
	// The rejection counts as a request: now (11 - 6) / 12.
	p = 5.0 / 12
	assert.False(t, th.reject("h", epoch, p+0.01))
	assert.True(t, th.reject("h", epoch, p-0.01))
	// While the host accepts half or more (K = 2), nothing is rejected.
	for range 20 {
		th.answered("g", epoch, true)
		th.answered("g", epoch, false)
	}
	assert.False(t, th.reject("g", epoch, 0))
	// A window later, everything is forgotten.
	later := epoch.Add(DefaultThrottleWindow)
	assert.False(t, th.reject("h", later, 0))
	r, limited := th.acceptedRate("h", epoch)
	assert.True(t, limited)
	assert.InDelta(t, 3.0, r, 1e-9, "3 accepted over a second")
}

func TestThrottleConfigErrors(t *testing.T) {
	for _, cfg := range []ThrottleConfig{{K: 0.5}, {K: -1}, {Window: -1}, {Window: 5}, {MaxHosts: -1}} {
		_, err := NewTransport(nil, WithAdaptiveThrottle(cfg))
		assert.ErrorIs(t, err, ErrInvalidConfig, "%+v", cfg)
	}
	_, err := NewTransport(nil, WithAdaptiveThrottle(ThrottleConfig{K: 1.1, Window: time.Minute}))
	assert.NoError(t, err)
}

// A host that refuses everything is soon spared most requests: they fail
// at once with ErrThrottled, unsent.
func TestTransportThrottlesAHostThatRefuses(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: http.StatusTooManyRequests})
	c := &http.Client{Transport: newTransport(t, nil, WithClock(clk), WithoutPacing(), WithMaxAttempts(1),
		WithRandSource(seeded()), WithAdaptiveThrottle(ThrottleConfig{}))}
	throttled := 0
	for range 100 {
		resp, err := c.Get(srv.URL)
		if err != nil {
			require.ErrorIs(t, err, ErrThrottled)
			var pe *PaceError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, PaceThrottled, pe.Reason)
			throttled++
			continue
		}
		resp.Body.Close()
	}
	assert.Equal(t, 100, throttled+srv.Hits())
	assert.Greater(t, throttled, 80, "most requests never sent")
}
