package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/client"
)

// The bar of drill 2: full jitter clears the herd sooner, and with fewer
// calls, than plain exponential backoff. Un-jittered, the clients that
// failed together come back together: each time the recovered service can
// take 50 of them, and the other 950 wait another 5 s in lockstep.
func TestFullJitterDrainsSoonerWithFewerCallsThanExponential(t *testing.T) {
	cfg := DefaultConfig()
	exp, full := simulate(t, cfg, "exponential"), simulate(t, cfg, "full jitter")
	t.Logf("exponential: %d calls, drained in %v; full jitter: %d calls, drained in %v",
		exp.Attempts, exp.Drain, full.Attempts, full.Drain)
	assert.Less(t, full.Drain, exp.Drain)
	assert.Less(t, full.Attempts, exp.Attempts)
	assert.Equal(t, cfg.Clients, exp.Succeeded)
	assert.Equal(t, cfg.Clients, full.Succeeded)

	// The price and the gain: full jitter waits half the ceiling on
	// average, so it calls more during the outage, and far less after.
	assert.Greater(t, full.OutageAttempts, exp.OutageAttempts)
	assert.Less(t, 10*(full.Attempts-full.OutageAttempts), exp.Attempts-exp.OutageAttempts)
	var after []int
	for sec, n := range exp.PerSecond {
		if sec >= int(cfg.Outage/time.Second) && n > 0 {
			after = append(after, n)
		}
	}
	var lockstep []int
	for left := cfg.Clients; left > 0; left -= 50 {
		lockstep = append(lockstep, left)
	}
	assert.Equal(t, lockstep, after, "the herd comes back whole, every 5 s, and 50 get through")

	// Not an accident of the seed.
	for seed := uint64(2); seed <= 5; seed++ {
		cfg.Seed = seed
		exp, full := simulate(t, cfg, "exponential"), simulate(t, cfg, "full jitter")
		assert.Less(t, full.Drain, exp.Drain, "seed %d", seed)
		assert.Less(t, full.Attempts, exp.Attempts, "seed %d", seed)
	}
}

func TestStrategiesCompared(t *testing.T) {
	cfg := DefaultConfig()
	none := simulate(t, cfg, "no backoff")
	exp := simulate(t, cfg, "exponential")
	budget := simulate(t, cfg, "full jitter + budget")
	// Retrying at once, every client calls every 100 ms of the outage.
	assert.Equal(t, cfg.Clients*int(cfg.Outage/cfg.Latency), none.OutageAttempts)
	assert.Greater(t, none.Attempts, 10*exp.Attempts, "retrying at once multiplies load")
	// The budget lets each client retry while it has more than half its 10
	// tokens: 4 retries, then it gives up, long before the service is back.
	assert.Equal(t, 5*cfg.Clients, budget.Attempts)
	assert.Equal(t, cfg.Clients, budget.GaveUp)
	assert.Zero(t, budget.Drain)
	for _, s := range Strategies() {
		r := simulate(t, cfg, s.Name)
		assert.Equal(t, r.Requests, r.Succeeded+r.GaveUp, s.Name)
		assert.Equal(t, r.Attempts-r.Requests, r.Retries, s.Name)
		sum := 0
		for _, n := range r.PerSecond {
			sum += n
		}
		assert.Equal(t, r.Attempts, sum, s.Name)
	}
}

func TestSimulationIsDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Clients = 100
	first := simulate(t, cfg, "full jitter")
	assert.Equal(t, first, simulate(t, cfg, "full jitter"))
	// Same world, another seed: another run.
	cfg.Seed++
	assert.NotEqual(t, first.PerSecond, simulate(t, cfg, "full jitter").PerSecond)
}

func TestNoOutageNoHerd(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Outage = 0
	cfg.Capacity = 10 * cfg.Clients // all of them at once
	for _, s := range Strategies() {
		r := simulate(t, cfg, s.Name)
		assert.Zero(t, r.Retries, s.Name)
		assert.Equal(t, r.Requests, r.Succeeded, s.Name)
	}
}

func TestBoundsEndRequests(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Clients, cfg.MaxAttempts = 100, 4
	r := simulate(t, cfg, "no backoff")
	assert.Equal(t, 4*r.Requests, r.Attempts, "all four in the outage")
	assert.Equal(t, r.Requests, r.GaveUp)

	cfg.MaxAttempts, cfg.Deadline = 0, 10*time.Second
	r = simulate(t, cfg, "exponential")
	assert.Equal(t, r.Requests, r.GaveUp, "the deadline comes before the service does")
	assert.Less(t, len(r.PerSecond), 10)

	// A request still retrying at the Horizon is given up.
	slow := Strategy{Name: "slow", Backoff: client.Backoff{Base: 2 * Horizon, Cap: 2 * Horizon, Jitter: client.NoJitter}}
	cfg.Deadline = 0
	r, err := Simulate(cfg, slow)
	require.NoError(t, err)
	assert.Equal(t, r.Requests, r.Attempts)
	assert.Equal(t, r.Requests, r.GaveUp)
}

func TestBadConfigIsAnErrorNotAHang(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"no clients":        func(c *Config) { c.Clients = 0 },
		"negative outage":   func(c *Config) { c.Outage = -time.Second },
		"zero latency":      func(c *Config) { c.Latency = 0 }, // immediate retries never leave the outage
		"zero capacity":     func(c *Config) { c.Capacity = 0 },
		"under one a time":  func(c *Config) { c.Capacity = 5 }, // 0.5 per 100 ms: never served
		"negative attempts": func(c *Config) { c.MaxAttempts = -1 },
		"negative deadline": func(c *Config) { c.Deadline = -time.Second },
		"too much work":     func(c *Config) { c.Clients, c.Latency = 1_000_000, time.Millisecond },
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

// The README's chart is herd.svg, made by
//
//	go run ./examples/herd -svg examples/herd/herd.svg
//
// It must be well-formed, and what that command makes today.
func TestChartIsCurrentAndWellFormed(t *testing.T) {
	cfg := DefaultConfig()
	var results []Result
	for _, s := range Strategies() {
		results = append(results, simulate(t, cfg, s.Name))
	}
	var buf bytes.Buffer
	require.NoError(t, WriteSVG(&buf, cfg, results))

	var again bytes.Buffer
	require.NoError(t, WriteSVG(&again, cfg, results))
	assert.Equal(t, buf.Bytes(), again.Bytes(), "the same runs draw the same bytes")

	polylines := 0
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	dec.Strict = true
	for depth := 0; ; {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			assert.Zero(t, depth)
			break
		}
		require.NoError(t, err)
		switch tok := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				assert.Equal(t, "svg", tok.Name.Local)
				assert.Equal(t, "http://www.w3.org/2000/svg", tok.Name.Space)
			}
			if tok.Name.Local == "polyline" {
				polylines++
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
	assert.Equal(t, len(Strategies()), polylines, "one line per strategy")

	committed, err := os.ReadFile("herd.svg")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(buf.Bytes(), committed),
		"herd.svg is stale: go run ./examples/herd -svg examples/herd/herd.svg")
}

func simulate(t *testing.T, cfg Config, name string) Result {
	t.Helper()
	for _, s := range Strategies() {
		if s.Name == name {
			r, err := Simulate(cfg, s)
			require.NoError(t, err)
			return r
		}
	}
	t.Fatalf("no strategy %q", name)
	return Result{}
}
