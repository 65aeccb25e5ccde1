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
	jitter, budget := simulate(t, cfg, s[2]), simulate(t, cfg, s[3])
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
		rs = append(rs, simulate(t, cfg, s))
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
	first := simulate(t, cfg, s)
	assert.Equal(t, first, simulate(t, cfg, s))
	// Same world, another seed: another run.
	cfg.Seed++
	assert.NotEqual(t, first.PerSecond, simulate(t, cfg, s).PerSecond)
}

func TestNoOutageNoRetries(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Clients, cfg.Outage = 100, 0
	for _, s := range Strategies() {
		r := simulate(t, cfg, s)
		assert.Zero(t, r.Retries, s.Name)
		assert.Equal(t, r.Requests, r.Succeeded, s.Name)
	}
}

func TestMaxAttemptsBoundsCalls(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Clients, cfg.MaxAttempts = 100, 4
	r := simulate(t, cfg, Strategies()[0])
	assert.LessOrEqual(t, r.Attempts, 4*r.Requests)
	assert.Greater(t, r.Attempts, r.Requests, "the outage made it retry")
}

func TestBadConfigIsAnErrorNotAHang(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"no clients":        func(c *Config) { c.Clients = 0 },
		"zero interval":     func(c *Config) { c.Interval = 0 },  // would loop forever
		"negative interval": func(c *Config) { c.Interval = -1 }, // would panic in Int64N
		"negative outage":   func(c *Config) { c.Outage = -time.Second },
		"zero latency":      func(c *Config) { c.Latency = 0 }, // immediate retries never leave the outage
		"zero capacity":     func(c *Config) { c.Capacity = 0 },
		"negative attempts": func(c *Config) { c.MaxAttempts = -1 },
		"negative deadline": func(c *Config) { c.Deadline = -time.Second },
		"too many requests": func(c *Config) { c.Interval = time.Nanosecond },
	} {
		cfg := DefaultConfig()
		mutate(&cfg)
		assert.Error(t, cfg.Validate(), name)
		_, err := Simulate(cfg, Strategies()[0])
		assert.Error(t, err, name)
	}
	require.NoError(t, DefaultConfig().Validate())

	bad := Strategies()[1]
	bad.Backoff.Jitter = 42
	_, err := Simulate(DefaultConfig(), bad)
	assert.ErrorContains(t, err, "Jitter 42")
}

func simulate(t *testing.T, cfg Config, s Strategy) Result {
	t.Helper()
	r, err := Simulate(cfg, s)
	require.NoError(t, err)
	return r
}
