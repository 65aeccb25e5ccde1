package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetryBudgetKeepsAnOutageFromMultiplyingLoad(t *testing.T) {
	cfg := DefaultConfig()
	require.Equal(t, 1000, cfg.Clients)
	require.Equal(t, 30*time.Second, cfg.Outage)
	s := Strategies()
	jitter, budget := Simulate(cfg, s[2]), Simulate(cfg, s[3])
	t.Logf("full jitter: %d calls (%d retries); with budget: %d calls (%d retries)",
		jitter.Attempts, jitter.Retries, budget.Attempts, budget.Retries)

	assert.Equal(t, 70000, jitter.Requests)
	assert.Equal(t, jitter.Requests, budget.Requests, "same traffic")
	assert.Less(t, budget.Attempts*5, jitter.Attempts, "total calls with the budget are under a fifth")
	assert.Less(t, budget.Retries*50, jitter.Retries, "retries under 2%")
	// The budget lets each client retry while it has more than half its 10
	// tokens: 4 retries per client, then one attempt per request.
	assert.Equal(t, 4*cfg.Clients, budget.Retries)
	assert.Equal(t, 30000+4000, budget.OutageAttempts)
	// The price: requests during the outage fail fast instead of waiting.
	assert.Equal(t, 30000, budget.GaveUp)
	// The gain: no backlog hits the recovering service.
	assert.Zero(t, budget.Drain)
	assert.Greater(t, jitter.Drain, 5*time.Second)
	assert.Less(t, budget.Peak, jitter.Peak/4)
	for _, r := range []Result{jitter, budget} {
		assert.Equal(t, r.Requests, r.Succeeded+r.GaveUp, r.Strategy)
		sum := 0
		for _, n := range r.PerSecond {
			sum += n
		}
		assert.Equal(t, r.Attempts, sum, r.Strategy)
	}
}

func TestBackoffStrategiesCompared(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Clients = 200 // keep "no backoff" quick under -race
	var rs []Result
	for _, s := range Strategies() {
		rs = append(rs, Simulate(cfg, s))
	}
	none, exp, jitter, budget := rs[0], rs[1], rs[2], rs[3]
	assert.Greater(t, none.Attempts, 10*jitter.Attempts, "retrying at once multiplies load")
	assert.Greater(t, none.Peak, 10*exp.Peak)
	// Without contention during the outage, full jitter's shorter mean
	// wait means more calls than un-jittered backoff; both dwarf the budget.
	assert.Greater(t, jitter.Attempts, exp.Attempts)
	assert.Less(t, 3*budget.Attempts, exp.Attempts)
}

func TestSimulationIsDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Clients = 50
	s := Strategies()[2]
	assert.Equal(t, Simulate(cfg, s), Simulate(cfg, s))
	cfg.Seed++
	assert.NotEqual(t, Simulate(cfg, s).Attempts, Simulate(DefaultConfig(), s).Attempts)
}

func TestNoOutageNoRetries(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Clients, cfg.Outage = 100, 0
	for _, s := range Strategies() {
		r := Simulate(cfg, s)
		assert.Zero(t, r.Retries, s.Name)
		assert.Equal(t, r.Requests, r.Succeeded, s.Name)
	}
}

func TestMaxAttemptsBoundsCalls(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Clients, cfg.MaxAttempts = 100, 4
	r := Simulate(cfg, Strategies()[0])
	assert.LessOrEqual(t, r.Attempts, 4*r.Requests)
}
