package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sluice-go/sluice/client"
)

// Config describes the simulated world: a fleet of clients sending steady
// traffic to one service, which fails every call for Outage and then
// recovers with limited capacity. Everything runs in virtual time.
type Config struct {
	// Clients is the number of independent clients (processes): each has its
	// own random source and, with a budget, its own RetryBudget.
	Clients int
	// Interval is how often each client sends a new request (open loop: new
	// requests do not wait for earlier ones), starting at a random phase.
	Interval time.Duration
	// Before, Outage and After are the phases: healthy, failing every call,
	// healthy again. New requests are sent until the end of After.
	Before, Outage, After time.Duration
	// Latency is the time from sending an attempt to its answer.
	Latency time.Duration
	// Capacity is how many attempts the healthy service serves per second;
	// the excess is answered 503, as an overloaded service would.
	Capacity int
	// MaxAttempts bounds attempts per request (0: until the deadline).
	MaxAttempts int
	// Deadline bounds each request: a wait that would end past it is not
	// taken, as in client.Transport.
	Deadline time.Duration
	// Seed makes a run reproducible.
	Seed uint64
}

// DefaultConfig is drill 2 of the reference, made concrete: 1,000 clients at
// one request per second each, a 30 s outage after 10 s, 30 s more
// traffic after recovery, 100 ms answers, capacity twice the normal load,
// and clients that retry until a 30 s per-request deadline.
func DefaultConfig() Config {
	return Config{
		Clients:  1000,
		Interval: time.Second,
		Before:   10 * time.Second,
		Outage:   30 * time.Second,
		After:    30 * time.Second,
		Latency:  100 * time.Millisecond,
		Capacity: 2000,
		Deadline: 30 * time.Second,
		Seed:     1,
	}
}

// maxRequests bounds the requests of one run, which all live in memory.
const maxRequests = 20_000_000

// Validate reports the settings a simulation cannot run with: a zero or
// negative count, rate or latency (the run would never end, or divide by
// zero), negative phases or bounds, or more requests than fit in memory.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("herd: "+format, args...))
		}
	}
	check(c.Clients > 0, "Clients %d: at least one is needed", c.Clients)
	check(c.Interval > 0, "Interval %v: must be positive", c.Interval)
	check(c.Before >= 0 && c.Outage >= 0 && c.After >= 0, "phases %v, %v, %v: none may be negative", c.Before, c.Outage, c.After)
	// An answer takes time: with none, immediate retries would never leave
	// the outage.
	check(c.Latency > 0, "Latency %v: must be positive", c.Latency)
	check(c.Capacity > 0, "Capacity %d: must be positive", c.Capacity)
	check(c.MaxAttempts >= 0, "MaxAttempts %d: negative", c.MaxAttempts)
	check(c.Deadline >= 0, "Deadline %v: negative", c.Deadline)
	if c.Clients > 0 && c.Interval > 0 && c.Before >= 0 && c.Outage >= 0 && c.After >= 0 {
		// Compare in floats: the product may overflow an int.
		n := float64(c.Clients) * (float64(c.Before+c.Outage+c.After)/float64(c.Interval) + 1)
		check(n <= maxRequests, "%d clients at one request per %v for %v: more than %d requests",
			c.Clients, c.Interval, c.Before+c.Outage+c.After, maxRequests)
	}
	return errors.Join(errs...)
}

// Strategy is how clients retry.
type Strategy struct {
	Name string
	// Backoff schedules the waits; ignored when Immediate is set.
	Backoff client.Backoff
	// Immediate retries as soon as the failed answer arrives.
	Immediate bool
	// Budget gives every client a client.RetryBudget (10 tokens, ratio 0.1).
	Budget bool
}

// Strategies are the four of drill 2, plus the retry budget: the drill-3
// schedule (base 200 ms, cap 5 s) without and with jitter.
func Strategies() []Strategy {
	exp := client.Backoff{Base: 200 * time.Millisecond, Cap: 5 * time.Second, Jitter: client.NoJitter}
	full := exp
	full.Jitter = client.FullJitter
	return []Strategy{
		{Name: "no backoff", Immediate: true},
		{Name: "exponential", Backoff: exp},
		{Name: "full jitter", Backoff: full},
		{Name: "full jitter + budget", Backoff: full, Budget: true},
	}
}

// Result sums up a run.
type Result struct {
	Strategy  string
	Requests  int // requests sent
	Succeeded int
	GaveUp    int // requests that ended in failure
	Attempts  int // calls made to the service, retries included
	Retries   int // Attempts - first attempts
	// OutageAttempts are the calls made while the service was down.
	OutageAttempts int
	// Peak is the largest number of calls in one second, at PeakAt.
	Peak   int
	PeakAt time.Duration
	// Drain is how long after recovery the last retry was sent: the time
	// the backlog of retries took to clear.
	Drain time.Duration
	// PerSecond is the number of calls in each second.
	PerSecond []int
}

// request is one logical request and its retry state.
type request struct {
	client   int32
	attempts int32
	start    time.Duration
	next     time.Duration // when its next attempt is sent
	prev     time.Duration // its previous backoff delay
}

// slotWidth is the resolution of the timing wheel. Events keep their exact
// times; the wheel only orders them to within a slot, which is all the
// per-second accounting needs.
const slotWidth = 10 * time.Millisecond

// Simulate runs one strategy. It is deterministic for a given Config, and
// fails when the Config or the strategy's Backoff does not validate.
func Simulate(cfg Config, s Strategy) (Result, error) {
	if err := errors.Join(cfg.Validate(), s.Backoff.Validate()); err != nil {
		return Result{}, fmt.Errorf("herd: strategy %q: %w", s.Name, err)
	}
	master := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	rngs := make([]*rand.Rand, cfg.Clients)
	budgets := make([]*client.RetryBudget, cfg.Clients)
	end := cfg.Before + cfg.Outage + cfg.After
	var reqs []request
	for c := range cfg.Clients {
		rngs[c] = rand.New(rand.NewPCG(master.Uint64(), master.Uint64()))
		if s.Budget {
			b, err := client.NewRetryBudget(client.DefaultBudgetTokens, client.DefaultBudgetRatio)
			if err != nil {
				return Result{}, err
			}
			budgets[c] = b
		}
		phase := time.Duration(rngs[c].Int64N(int64(cfg.Interval)))
		for t := phase; t < end; t += cfg.Interval {
			reqs = append(reqs, request{client: int32(c), start: t, next: t})
		}
	}

	var wheel [][]int32
	schedule := func(id int32, at time.Duration) {
		slot := int(at / slotWidth)
		for len(wheel) <= slot {
			wheel = append(wheel, nil)
		}
		wheel[slot] = append(wheel[slot], id)
	}
	for id := range reqs {
		schedule(int32(id), reqs[id].start)
	}

	res := Result{Strategy: s.Name, Requests: len(reqs)}
	var served []int // per second
	recovery := cfg.Before + cfg.Outage
	lastRetry := time.Duration(-1)
	for slot := 0; slot < len(wheel); slot++ {
		for i := 0; i < len(wheel[slot]); i++ {
			id := wheel[slot][i]
			r := &reqs[id]
			t := r.next
			sec := int(t / time.Second)
			for len(res.PerSecond) <= sec {
				res.PerSecond = append(res.PerSecond, 0)
				served = append(served, 0)
			}
			res.PerSecond[sec]++
			res.Attempts++
			if r.attempts > 0 {
				res.Retries++
				lastRetry = max(lastRetry, t)
			}
			r.attempts++
			down := t >= cfg.Before && t < recovery
			if down {
				res.OutageAttempts++
			}
			budget := budgets[r.client]
			if !down && served[sec] < cfg.Capacity {
				served[sec]++
				res.Succeeded++
				if budget != nil {
					budget.Success()
				}
				continue
			}
			if budget != nil {
				budget.Failure()
			}
			// The same decisions as client.Transport, in the same order.
			answer := t + cfg.Latency
			var delay time.Duration
			if !s.Immediate {
				delay = s.Backoff.Delay(int(r.attempts)-1, r.prev, rngs[r.client])
			}
			if (cfg.MaxAttempts > 0 && int(r.attempts) >= cfg.MaxAttempts) ||
				(budget != nil && !budget.CanRetry()) ||
				(cfg.Deadline > 0 && answer+delay > r.start+cfg.Deadline) {
				res.GaveUp++
				continue
			}
			r.prev, r.next = delay, answer+delay
			schedule(id, r.next)
		}
		wheel[slot] = nil // free as we go
	}
	for sec, n := range res.PerSecond {
		if n > res.Peak {
			res.Peak, res.PeakAt = n, time.Duration(sec)*time.Second
		}
	}
	if lastRetry >= recovery {
		res.Drain = lastRetry - recovery
	}
	return res, nil
}
