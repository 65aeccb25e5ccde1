package main

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sluice-go/sluice/client"
)

// Config describes the simulated world, the reference's thundering herd:
// a service crashes at t=0 and every client's request fails at that same
// moment (every connection broke at once). The clients retry; the service
// fails every call for Outage, then comes back with limited capacity.
// Everything runs in virtual time.
//
// Clients that fail together are what makes a herd: the same schedule
// brings them back together, unless jitter scatters them. (Clients whose
// failures are spread out, requests arriving at random through an outage,
// are scattered already: there, jitter only shortens the mean wait, and
// adds calls.)
type Config struct {
	// Clients is the number of clients, each with one request and, with a
	// budget, its own client.RetryBudget.
	Clients int
	// Outage is how long the service fails every call.
	Outage time.Duration
	// Latency is the time from sending an attempt to its answer.
	Latency time.Duration
	// Capacity is how many attempts per second the recovered service
	// serves. It holds at most Capacity × Latency of them at once: in any
	// window of one Latency it serves that many and answers the rest 503,
	// as an overloaded service would.
	Capacity int
	// MaxAttempts bounds attempts per request (0: no bound).
	MaxAttempts int
	// Deadline bounds each request: a wait that would end past it is not
	// taken, as in client.Transport (0: no deadline).
	Deadline time.Duration
	// Seed makes a run reproducible.
	Seed uint64
}

// DefaultConfig is drill 2 of the reference, made concrete: 1,000 clients
// fail at once, the service is down for 30 s, answers take 100 ms, and the
// service comes back cold, able to serve 500 attempts a second: half the
// herd. Clients retry until they get through.
func DefaultConfig() Config {
	return Config{
		Clients:  1000,
		Outage:   30 * time.Second,
		Latency:  100 * time.Millisecond,
		Capacity: 500,
		Seed:     1,
	}
}

// Horizon ends a run: a request still retrying an hour after the crash is
// counted as given up.
const Horizon = time.Hour

// maxWork bounds the attempts a run may have to simulate.
const maxWork = 1e8

// Validate reports the settings a simulation cannot run with: a zero or
// negative count, capacity or latency (the run would never end, or divide
// by zero), a negative outage or bound, or more work than a run should
// take.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("herd: "+format, args...))
		}
	}
	check(c.Clients > 0, "Clients %d: at least one is needed", c.Clients)
	check(c.Outage >= 0, "Outage %v: negative", c.Outage)
	// An answer takes time: with none, immediate retries would never leave
	// the outage.
	check(c.Latency > 0, "Latency %v: must be positive", c.Latency)
	check(c.Capacity > 0 && c.perWindow() >= 1,
		"Capacity %d: the service must serve at least one attempt per Latency (%v)", c.Capacity, c.Latency)
	check(c.MaxAttempts >= 0, "MaxAttempts %d: negative", c.MaxAttempts)
	check(c.Deadline >= 0, "Deadline %v: negative", c.Deadline)
	if c.Clients > 0 && c.Latency > 0 && c.Outage >= 0 && c.perWindow() >= 1 {
		// Retrying at once, every client calls once per Latency until the
		// service is back, which then serves perWindow of them per Latency.
		// In floats: the product may overflow an int.
		n := float64(c.Clients)
		work := n * (float64(min(c.Outage, Horizon))/float64(c.Latency) + 1 + n/float64(c.perWindow()))
		check(work <= maxWork, "%d clients, a %v outage and %d attempts served per %v: more than %.0g attempts to simulate",
			c.Clients, c.Outage, c.perWindow(), c.Latency, float64(maxWork))
	}
	return errors.Join(errs...)
}

// perWindow is how many attempts the recovered service serves per Latency.
func (c Config) perWindow() int64 {
	if c.Capacity <= 0 || c.Latency <= 0 {
		return 0
	}
	// Capacity × Latency, without overflow for any positive Latency.
	return int64(float64(c.Capacity) * c.Latency.Seconds())
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

// Strategies are those of drill 2, on the drill-3 schedule (base 200 ms,
// cap 5 s): no backoff, plain exponential backoff, its three jittered
// forms, and full jitter with a retry budget.
func Strategies() []Strategy {
	exp := client.Backoff{Base: 200 * time.Millisecond, Cap: 5 * time.Second, Jitter: client.NoJitter}
	jittered := func(j client.Jitter) client.Backoff {
		b := exp
		b.Jitter = j
		return b
	}
	return []Strategy{
		{Name: "no backoff", Immediate: true},
		{Name: "exponential", Backoff: exp},
		{Name: "full jitter", Backoff: jittered(client.FullJitter)},
		{Name: "equal jitter", Backoff: jittered(client.EqualJitter)},
		{Name: "decorrelated jitter", Backoff: jittered(client.DecorrelatedJitter)},
		{Name: "full jitter + budget", Backoff: jittered(client.FullJitter), Budget: true},
	}
}

// Result sums up a run.
type Result struct {
	Strategy  string
	Requests  int // one per client
	Succeeded int
	GaveUp    int // requests that ended in failure
	Attempts  int // calls made to the service, retries included
	Retries   int // Attempts - Requests
	// OutageAttempts are the calls made while the service was down.
	OutageAttempts int
	// Peak is the largest number of calls in one second, at PeakAt.
	Peak   int
	PeakAt time.Duration
	// Drain is how long after the service recovered the last call was
	// made: the time the herd took to clear.
	Drain time.Duration
	// PerSecond is the number of calls in each second since the crash.
	PerSecond []int
}

// request is one client's request and its retry state.
type request struct {
	attempts int32
	next     time.Duration // when its next attempt is sent
	prev     time.Duration // its previous backoff delay
	rng      *rand.Rand
	budget   *client.RetryBudget
}

// Simulate runs one strategy. It is deterministic for a given Config, and
// fails when the Config or the strategy's Backoff does not validate.
func Simulate(cfg Config, s Strategy) (Result, error) {
	if err := errors.Join(cfg.Validate(), s.Backoff.Validate()); err != nil {
		return Result{}, fmt.Errorf("herd: strategy %q: %w", s.Name, err)
	}
	master := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	reqs := make([]request, cfg.Clients)
	queue := make(attemptQueue, 0, cfg.Clients)
	for id := range reqs {
		r := &reqs[id]
		r.rng = rand.New(rand.NewPCG(master.Uint64(), master.Uint64()))
		if s.Budget {
			b, err := client.NewRetryBudget(client.DefaultBudgetTokens, client.DefaultBudgetRatio)
			if err != nil {
				return Result{}, err
			}
			r.budget = b
		}
		queue = append(queue, attempt{id: int32(id)})
	}
	heap.Init(&queue)

	res := Result{Strategy: s.Name, Requests: cfg.Clients}
	perWindow := cfg.perWindow()
	window, served := int64(-1), int64(0) // attempts arrive in time order
	last := time.Duration(-1)
	for queue.Len() > 0 {
		a := heap.Pop(&queue).(attempt)
		r := &reqs[a.id]
		t := r.next
		if t >= Horizon {
			res.GaveUp++
			continue
		}
		sec := int(t / time.Second)
		for len(res.PerSecond) <= sec {
			res.PerSecond = append(res.PerSecond, 0)
		}
		res.PerSecond[sec]++
		res.Attempts++
		last = t
		r.attempts++
		down := t < cfg.Outage
		if down {
			res.OutageAttempts++
		} else {
			if w := int64(t / cfg.Latency); w != window {
				window, served = w, 0
			}
			if served < perWindow {
				served++
				res.Succeeded++
				if r.budget != nil {
					r.budget.Success()
				}
				continue
			}
		}
		if r.budget != nil {
			r.budget.Failure()
		}
		// The same decisions as client.Transport, in the same order.
		answer := t + cfg.Latency
		var delay time.Duration
		if !s.Immediate {
			delay = s.Backoff.Delay(int(r.attempts)-1, r.prev, r.rng)
		}
		if (cfg.MaxAttempts > 0 && int(r.attempts) >= cfg.MaxAttempts) ||
			(r.budget != nil && !r.budget.CanRetry()) ||
			(cfg.Deadline > 0 && answer+delay > cfg.Deadline) {
			res.GaveUp++
			continue
		}
		r.prev, r.next = delay, answer+delay
		heap.Push(&queue, attempt{at: r.next, id: a.id})
	}
	res.Retries = res.Attempts - res.Requests
	for sec, n := range res.PerSecond {
		if n > res.Peak {
			res.Peak, res.PeakAt = n, time.Duration(sec)*time.Second
		}
	}
	if last >= cfg.Outage {
		res.Drain = last - cfg.Outage
	}
	return res, nil
}

// attempt is an attempt waiting to be sent.
type attempt struct {
	at time.Duration
	id int32
}

// attemptQueue orders attempts by time, then by client, so that a run
// does not depend on the order the heap happens to keep.
type attemptQueue []attempt

func (q attemptQueue) Len() int { return len(q) }
func (q attemptQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].id < q[j].id)
}
func (q attemptQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *attemptQueue) Push(x any)   { *q = append(*q, x.(attempt)) }
func (q *attemptQueue) Pop() any {
	old := *q
	a := old[len(old)-1]
	*q = old[:len(old)-1]
	return a
}
