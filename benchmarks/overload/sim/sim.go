// Package sim is the overload simulation: a backend of C workers behind a
// concurrency limiter, driven by an open-loop Poisson load, on virtual time.
// The limiter is the real backpressure.Limiter, run on the simulation's
// clock, so that the figures depend only on the seed, never on the machine
// that runs them.
//
// Each request arrives, is admitted or shed by the limiter, and if admitted
// queues at the backend until a worker is free, then takes a log-normal
// service time. Its client gives up after Timeout, but the backend works on
// it regardless, as real services do: a request is good if it completes
// within its client's timeout. The limiter sees every admitted request
// complete, with the latency from admission to completion.
package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// Config describes one run.
type Config struct {
	Workers int           // C, the backend's concurrency at the start
	Service time.Duration // S, the mean service time
	Spread  float64       // σ of the log-normal service time
	Load    float64       // arrivals, as a multiple of the starting capacity C/S
	Timeout time.Duration // the clients' timeout
	Warmup  time.Duration // run before measuring
	Span    time.Duration // measured time, after Warmup
	Changes []Change      // changes of the backend's concurrency, service time or load
	// Routes, when set, mixes requests of several kinds: each request is
	// of route i with probability Routes[i].Share, and takes a log-normal
	// service time around that route's mean. Service is then their mean
	// (set by Run), and a Change of Service scales every route alike.
	Routes []Route
	// Pareto, when positive, draws service times from a Pareto
	// distribution of this shape α (> 1) around the mean, in place of the
	// log-normal.
	Pareto float64
	// Hang is the share of requests that hang: each holds a worker for the
	// clients' whole Timeout, and never completes in time.
	Hang  float64
	Trace time.Duration // the interval between two points of the trace (0: none)
	Seed  uint64
}

// Change sets the backend's concurrency, its mean service time, the
// offered load, or several, At a time after the start; a zero field leaves
// that one as it was.
type Change struct {
	At      time.Duration
	Workers int
	Service time.Duration
	Load    float64
}

// Route is one kind of request of a mixed backend.
type Route struct {
	Share   float64
	Service time.Duration
}

// Default is the backend the README's figures come from: 50 workers, a
// 50ms mean service time (capacity 1,000 requests/s), σ 0.3, clients that
// give up after a second, 60s measured after 10s of warm-up.
func Default() Config {
	return Config{Workers: 50, Service: 50 * time.Millisecond, Spread: 0.3, Load: 1,
		Timeout: time.Second, Warmup: 10 * time.Second, Span: 60 * time.Second, Seed: 1}
}

// Result is what one run measured, over the requests that arrived in the
// measured span.
type Result struct {
	Contender string
	Arrived   int
	Shed      int
	Good      int // completed within the client's timeout
	// Goodput is the good requests per second as a share of the capacity
	// (the backend's concurrency over the mean service time, integrated
	// over the span).
	Goodput float64
	// P50 and P99 are the latencies of the admitted requests, from arrival
	// to completion; a request still unfinished when the run stops counts
	// with the time it had waited by then.
	P50, P99 time.Duration
	Trace    []Point
	// FinalLimit is the limit when the last request arrived.
	FinalLimit int
	// Done lists every completion, measured or not, in time order.
	Done []Completion
}

// Completion is one request completed.
type Completion struct {
	At, Latency time.Duration
}

// Point is the state of the limiter and the backend at one time.
type Point struct {
	At       time.Duration
	Limit    int // 0 without a limiter
	InFlight int // admitted and not complete
	Workers  int
	// P99 and Goodput are those of the requests that completed (Goodput:
	// completed in time, per capacity) since the previous point.
	P99     time.Duration
	Goodput float64
}

// Run simulates cfg with one contender.
func Run(cfg Config, c Contender) (Result, error) {
	if len(cfg.Routes) > 0 {
		cfg.Service = routesMean(cfg.Routes)
	}
	if cfg.Workers < 1 || cfg.Service <= 0 || cfg.Load <= 0 || cfg.Timeout <= 0 || cfg.Span <= 0 || cfg.Spread < 0 ||
		!(cfg.Pareto == 0 || cfg.Pareto > 1) || !(cfg.Hang >= 0 && cfg.Hang < 1) {
		return Result{}, errors.New("sim: invalid config")
	}
	s := &run{cfg: cfg, clock: &clock{now: epoch}, workers: cfg.Workers,
		service: cfg.Service, load: cfg.Load, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed))}
	if c.New != nil {
		l, err := c.New(s.clock)
		if err != nil {
			return Result{}, fmt.Errorf("sim: %s: %w", c.Name, err)
		}
		s.limiter = l
	}
	return s.simulate(c.Name), nil
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type run struct {
	cfg     Config
	clock   *clock
	limiter *backpressure.Limiter
	rng     *rand.Rand
	events  eventHeap
	seq     uint64

	workers int
	service time.Duration // the mean service time now
	load    float64       // the offered load now
	busy    int
	backlog []*request // waiting for a worker, oldest first
	head    int
	admits  int // admitted and not complete

	// measured
	latencies []time.Duration
	res       Result
	// per trace point
	pointLat  []time.Duration
	pointGood int
}

type request struct {
	arrived time.Duration
	permit  backpressure.Permit
	measure bool
}

type kind uint8

const (
	arrival kind = iota
	completion
	change
	tracePoint
)

type event struct {
	at   time.Duration
	seq  uint64
	kind kind
	req  *request
	ch   Change
}

func (s *run) schedule(e event) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.events, e)
}

func (s *run) simulate(name string) Result {
	cfg := s.cfg
	end := cfg.Warmup + cfg.Span
	stop := end + 2*cfg.Timeout
	s.schedule(event{at: s.interarrival(), kind: arrival})
	for _, ch := range cfg.Changes {
		s.schedule(event{at: ch.At, kind: change, ch: ch})
	}
	if cfg.Trace > 0 {
		s.schedule(event{at: 0, kind: tracePoint})
	}
	s.res.Contender = name
	for s.events.Len() > 0 {
		e := heap.Pop(&s.events).(event)
		if e.at > stop {
			break
		}
		s.clock.now = epoch.Add(e.at)
		switch e.kind {
		case arrival:
			if e.at < end {
				s.arrive(e.at)
				s.schedule(event{at: e.at + s.interarrival(), kind: arrival})
			}
		case completion:
			s.complete(e.at, e.req)
		case change:
			s.apply(e.at, e.ch)
		case tracePoint:
			s.point(e.at)
			if e.at+cfg.Trace <= end {
				s.schedule(event{at: e.at + cfg.Trace, kind: tracePoint})
			}
		}
	}
	return s.result(stop, end)
}

// result completes the run's Result once its events have stopped at stop.
func (s *run) result(stop, end time.Duration) Result {
	cfg := s.cfg
	// Requests still unfinished count with the time they waited so far.
	for _, r := range s.backlog[s.head:] {
		if r.measure {
			s.latencies = append(s.latencies, stop-r.arrived)
		}
	}
	for _, e := range s.events {
		if e.kind == completion && e.req.measure {
			s.latencies = append(s.latencies, stop-e.req.arrived)
		}
	}
	s.res.Goodput = float64(s.res.Good) / s.capacity(cfg.Warmup, end)
	if s.limiter != nil {
		s.res.FinalLimit = s.limiter.Limit()
	}
	s.res.P50, s.res.P99 = Percentile(s.latencies, 0.50), Percentile(s.latencies, 0.99)
	return s.res
}

// apply changes the backend: a request that starts its service from now on
// takes the new service time.
func (s *run) apply(now time.Duration, ch Change) {
	if ch.Workers > 0 {
		s.workers = ch.Workers
	}
	if ch.Service > 0 {
		s.service = ch.Service
	}
	if ch.Load > 0 {
		s.load = ch.Load
	}
	s.startWork(now)
}

// capacity returns the requests the backend can complete from one time to
// another: its concurrency over the mean service time, integrated.
func (s *run) capacity(from, to time.Duration) float64 { return Capacity(s.cfg, from, to) }

// Capacity returns the requests cfg's backend can complete from one time to
// another: its concurrency over its mean service time, integrated. Hung
// requests are not counted: a backend of which a share H hangs completes a
// share 1-H of its requests in time at best.
func Capacity(cfg Config, from, to time.Duration) float64 {
	if len(cfg.Routes) > 0 {
		cfg.Service = routesMean(cfg.Routes)
	}
	rate := func(workers int, service time.Duration) float64 {
		mean := (1-cfg.Hang)*service.Seconds() + cfg.Hang*cfg.Timeout.Seconds()
		return (1 - cfg.Hang) * float64(workers) / mean
	}
	workers, service, at, total := cfg.Workers, cfg.Service, from, 0.0
	for _, ch := range cfg.Changes {
		if ch.At > from && ch.At < to {
			total += rate(workers, service) * (ch.At - at).Seconds()
			at = ch.At
		}
		if ch.At >= to {
			break
		}
		if ch.Workers > 0 {
			workers = ch.Workers
		}
		if ch.Service > 0 {
			service = ch.Service
		}
	}
	return total + rate(workers, service)*(to-at).Seconds()
}

// routesMean is the mean service time of a mix of routes.
func routesMean(routes []Route) time.Duration {
	var sum, shares float64
	for _, r := range routes {
		sum += r.Share * float64(r.Service)
		shares += r.Share
	}
	return time.Duration(sum / shares)
}

// interarrival draws the time to the next arrival, at the load in force:
// arrivals are a Poisson process of rate load × the requests the backend
// completes per second at the start (hung ones included).
func (s *run) interarrival() time.Duration {
	mean := (1-s.cfg.Hang)*s.cfg.Service.Seconds() + s.cfg.Hang*s.cfg.Timeout.Seconds()
	rate := s.load * float64(s.cfg.Workers) / mean
	return max(time.Duration(s.rng.ExpFloat64()/rate*float64(time.Second)), 1)
}

// serviceTime draws one request's service time.
func (s *run) serviceTime() time.Duration { return s.cfg.ServiceTime(s.rng, s.service) }

// ServiceTime draws one request's service time on a backend of cfg whose
// mean service time is now service, from rng: a hung request holds its
// worker just past the client's timeout; any other takes a log-normal (σ
// Spread) or Pareto (α) time around that mean, scaled by its route's. The
// real-HTTP harness draws its own as the simulation does.
func (cfg Config) ServiceTime(rng *rand.Rand, service time.Duration) time.Duration {
	if cfg.Hang > 0 && rng.Float64() < cfg.Hang {
		return cfg.Timeout + time.Millisecond // its client gave up just before
	}
	mean := float64(service)
	if len(cfg.Routes) > 0 {
		mean *= cfg.route(rng) / float64(routesMean(cfg.Routes))
	}
	if α := cfg.Pareto; α > 0 {
		xm := mean * (α - 1) / α // the Pareto of shape α and scale xm has mean α·xm/(α-1)
		return max(time.Duration(xm/math.Pow(1-rng.Float64(), 1/α)), 1)
	}
	σ := cfg.Spread
	μ := math.Log(mean) - σ*σ/2
	return max(time.Duration(math.Exp(μ+σ*rng.NormFloat64())), 1)
}

// route draws a request's route and returns its mean service time.
func (cfg Config) route(rng *rand.Rand) float64 {
	var total float64
	for _, r := range cfg.Routes {
		total += r.Share
	}
	u := rng.Float64() * total
	for _, r := range cfg.Routes {
		if u < r.Share {
			return float64(r.Service)
		}
		u -= r.Share
	}
	return float64(cfg.Routes[len(cfg.Routes)-1].Service)
}

func (s *run) arrive(now time.Duration) {
	r := &request{arrived: now, measure: now >= s.cfg.Warmup}
	if r.measure {
		s.res.Arrived++
	}
	if s.limiter != nil {
		p, err := s.limiter.Acquire(context.Background(), "", core.Default)
		if err != nil {
			if r.measure {
				s.res.Shed++
			}
			return
		}
		r.permit = p
	}
	s.admits++
	s.backlog = append(s.backlog, r)
	s.startWork(now)
}

// startWork gives free workers the oldest requests waiting.
func (s *run) startWork(now time.Duration) {
	for s.busy < s.workers && s.head < len(s.backlog) {
		r := s.backlog[s.head]
		s.backlog[s.head] = nil
		s.head++
		s.busy++
		s.schedule(event{at: now + s.serviceTime(), kind: completion, req: r})
	}
	if s.head > 1024 && s.head*2 > len(s.backlog) {
		s.backlog = append(s.backlog[:0], s.backlog[s.head:]...)
		s.head = 0
	}
}

func (s *run) complete(now time.Duration, r *request) {
	s.busy--
	s.admits--
	r.permit.Done(core.Succeeded)
	latency := now - r.arrived
	good := latency <= s.cfg.Timeout
	if r.measure {
		s.latencies = append(s.latencies, latency)
		if good {
			s.res.Good++
		}
	}
	s.res.Done = append(s.res.Done, Completion{At: now, Latency: latency})
	s.pointLat = append(s.pointLat, latency)
	if good {
		s.pointGood++
	}
	s.startWork(now)
}

func (s *run) point(now time.Duration) {
	p := Point{At: now, InFlight: s.admits, Workers: s.workers, P99: Percentile(s.pointLat, 0.99)}
	if s.limiter != nil {
		p.Limit = s.limiter.Limit()
	}
	if now > 0 {
		p.Goodput = float64(s.pointGood) / (float64(s.workers) * s.cfg.Trace.Seconds() / s.service.Seconds())
	}
	s.res.Trace = append(s.res.Trace, p)
	s.pointLat, s.pointGood = s.pointLat[:0], 0
}

// Percentile returns the q-quantile of ds (nearest rank), zero for none. It
// sorts ds.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// clock is the simulation's virtual time. The simulated limiters have no
// queue, so nothing waits on a timer.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func (c *clock) SleepUntil(context.Context, time.Time) error {
	panic("sim: the simulated limiters do not wait")
}

func (c *clock) AfterFunc(time.Duration, func()) (stop func() bool) {
	panic("sim: the simulated limiters do not queue")
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
