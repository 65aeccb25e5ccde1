package backpressure

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
)

// The fair-shares simulation: tenants send open-loop Poisson load to a
// backend of C workers (log-normal service times) behind the real Limiter,
// queue included, on virtual time. Each waiting request is a goroutine
// blocked in Acquire, as in a server; the simulation moves time only once
// every goroutine is either back or waiting in the queue, and handles the
// answers of one instant in request order, so that a run depends on its
// seed alone.

// tenantLoad is one tenant's traffic.
type tenantLoad struct {
	key    string
	weight int     // 0: 1, and left out of Config.Weights
	rate   float64 // arrivals per second
	class  core.Class
}

type fairSimConfig struct {
	workers       int
	service       time.Duration // mean
	spread        float64       // σ of the log-normal service time
	timeout       time.Duration // a request is good if it completes within this of its arrival
	warmup, span  time.Duration
	tenants       []tenantLoad
	fair          bool
	queue         int
	maxWait       time.Duration
	perKey        int
	seed          uint64
	newController func() Controller // nil: Static(workers)
	check         func(*Limiter)    // if set, called whenever every goroutine is back or waiting
	maxKeys       int
}

// capacity is the backend's requests per second.
func (c fairSimConfig) capacity() float64 { return float64(c.workers) / c.service.Seconds() }

type tenantResult struct {
	arrived, shed, good int
	latencies           []time.Duration // of the admitted, arrival to completion
	waits               []time.Duration // of the admitted, arrival to admission
	goodput             float64         // good requests per second
	p99                 time.Duration
}

type simReq struct {
	id      uint64
	tenant  int
	arrived time.Duration
	service time.Duration
	measure bool
	queued  chan struct{}
	permit  Permit
}

type simOutcome struct {
	r   *simReq
	p   Permit
	err error
}

type simKind uint8

const (
	simArrival simKind = iota
	simCompletion
	simTimerFires
)

type simEvent struct {
	at     time.Duration
	seq    uint64
	kind   simKind
	tenant int
	req    *simReq
	timer  *simTimer
}

type simTimer struct {
	f              func()
	stopped, fired bool
}

type fairSim struct {
	cfg     fairSimConfig
	mu      sync.Mutex // guards now, events and seq: AfterFunc runs on the waiters' goroutines
	now     time.Duration
	events  simEvents
	seq     uint64
	l       *Limiter
	rngs    []*rand.Rand // one per tenant, so that a tenant's load is the same whoever else runs
	results chan simOutcome
	out     int // goroutines in Acquire
	ids     uint64

	busy    int
	backlog []*simReq
	res     []tenantResult
}

type simReqKey struct{}

func runFairSim(cfg fairSimConfig) ([]tenantResult, error) {
	s := &fairSim{cfg: cfg, results: make(chan simOutcome, 64), res: make([]tenantResult, len(cfg.tenants))}
	ctl := Controller(Static(cfg.workers))
	if cfg.newController != nil {
		ctl = cfg.newController()
	}
	weights := map[string]int{}
	for _, t := range cfg.tenants {
		if t.weight > 0 {
			weights[t.key] = t.weight
		}
	}
	if !cfg.fair {
		weights = nil
	}
	l, err := New(Config{Controller: ctl, Queue: cfg.queue, MaxWait: cfg.maxWait, PerKey: cfg.perKey, MaxKeys: cfg.maxKeys,
		Fair: cfg.fair, Weights: weights, Clock: s, Observer: func(ctx context.Context, e core.Event) {
			if e.Kind == core.Queued {
				ctx.Value(simReqKey{}).(*simReq).queued <- struct{}{}
			}
		}})
	if err != nil {
		return nil, err
	}
	s.l = l
	for i := range cfg.tenants {
		s.rngs = append(s.rngs, rand.New(rand.NewPCG(cfg.seed, uint64(i)+1)))
		s.schedule(simEvent{at: s.interarrival(i), kind: simArrival, tenant: i})
	}
	end := cfg.warmup + cfg.span
	for {
		s.mu.Lock()
		if s.events.Len() == 0 {
			s.mu.Unlock()
			break
		}
		e := heap.Pop(&s.events).(simEvent)
		s.now = e.at
		s.mu.Unlock()
		switch e.kind {
		case simArrival:
			if e.at < end {
				s.arrive(e.tenant)
				s.schedule(simEvent{at: e.at + s.interarrival(e.tenant), kind: simArrival, tenant: e.tenant})
			}
		case simCompletion:
			s.complete(e.req)
		case simTimerFires:
			s.mu.Lock()
			run := !e.timer.stopped
			e.timer.fired = true
			s.mu.Unlock()
			if run {
				e.timer.f()
				s.settle(nil)
			}
		}
	}
	if l.InFlight() != 0 || l.Waiting() != 0 || len(l.keys) != 0 {
		return nil, fmt.Errorf("fairSim: %d in flight, %d waiting, %d keys once the run is over", l.InFlight(), l.Waiting(), len(l.keys))
	}
	for i := range s.res {
		r := &s.res[i]
		r.goodput = float64(r.good) / cfg.span.Seconds()
		r.p99 = percentile(r.latencies, 0.99)
	}
	return s.res, nil
}

func (s *fairSim) schedule(e simEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	e.seq = s.seq
	heap.Push(&s.events, e)
}

func (s *fairSim) interarrival(tenant int) time.Duration {
	return max(time.Duration(s.rngs[tenant].ExpFloat64()/s.cfg.tenants[tenant].rate*float64(time.Second)), 1)
}

func (s *fairSim) serviceTime(tenant int) time.Duration {
	σ := s.cfg.spread
	μ := math.Log(float64(s.cfg.service)) - σ*σ/2
	return max(time.Duration(math.Exp(μ+σ*s.rngs[tenant].NormFloat64())), 1)
}

func (s *fairSim) arrive(tenant int) {
	s.ids++
	r := &simReq{id: s.ids, tenant: tenant, arrived: s.now, service: s.serviceTime(tenant),
		measure: s.now >= s.cfg.warmup, queued: make(chan struct{}, 1)}
	if r.measure {
		s.res[tenant].arrived++
	}
	t := s.cfg.tenants[tenant]
	ctx := context.WithValue(context.Background(), simReqKey{}, r)
	s.out++
	go func() {
		p, err := s.l.Acquire(ctx, t.key, t.class)
		s.results <- simOutcome{r, p, err}
	}()
	s.settle(r)
}

// settle waits until every goroutine in Acquire is back or waiting in the
// queue (arrived, the one just started, first), then handles the answers
// that came back, in request order.
func (s *fairSim) settle(arrived *simReq) {
	var batch []simOutcome
	for arrived != nil {
		select {
		case o := <-s.results:
			s.out--
			batch = append(batch, o)
			if o.r == arrived {
				arrived = nil
			}
		case <-arrived.queued:
			arrived = nil
		}
	}
	for s.out > s.l.Waiting() {
		batch = append(batch, <-s.results)
		s.out--
	}
	if s.cfg.check != nil {
		s.cfg.check(s.l)
	}
	slices.SortFunc(batch, func(a, b simOutcome) int { return cmp.Compare(a.r.id, b.r.id) })
	for _, o := range batch {
		if o.err != nil {
			if o.r.measure {
				s.res[o.r.tenant].shed++
			}
			continue
		}
		o.r.permit = o.p
		if o.r.measure {
			s.res[o.r.tenant].waits = append(s.res[o.r.tenant].waits, s.now-o.r.arrived)
		}
		s.backlog = append(s.backlog, o.r)
	}
	s.startWork()
}

func (s *fairSim) startWork() {
	for s.busy < s.cfg.workers && len(s.backlog) > 0 {
		r := s.backlog[0]
		s.backlog = s.backlog[1:]
		s.busy++
		s.schedule(simEvent{at: s.now + r.service, kind: simCompletion, req: r})
	}
}

func (s *fairSim) complete(r *simReq) {
	s.busy--
	latency := s.now - r.arrived
	if r.measure {
		res := &s.res[r.tenant]
		res.latencies = append(res.latencies, latency)
		if latency <= s.cfg.timeout {
			res.good++
		}
	}
	r.permit.Done(core.Succeeded)
	s.settle(nil)
}

// Now, SleepUntil and AfterFunc make the simulation the Limiter's clock.
func (s *fairSim) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return epoch.Add(s.now)
}

func (s *fairSim) SleepUntil(context.Context, time.Time) error {
	panic("fairSim: the Limiter never sleeps")
}

func (s *fairSim) AfterFunc(d time.Duration, f func()) func() bool {
	t := &simTimer{f: f}
	s.mu.Lock()
	s.seq++
	heap.Push(&s.events, simEvent{at: s.now + d, seq: s.seq, kind: simTimerFires, timer: t})
	s.mu.Unlock()
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if t.fired || t.stopped {
			return false
		}
		t.stopped = true
		return true
	}
}

type simEvents []simEvent

func (h simEvents) Len() int { return len(h) }
func (h simEvents) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h simEvents) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *simEvents) Push(x any)   { *h = append(*h, x.(simEvent)) }
func (h *simEvents) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// percentile returns the q-quantile of ds (nearest rank), zero for none.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[min(max(int(math.Ceil(q*float64(len(ds))))-1, 0), len(ds)-1)]
}

// fairAllocation returns each tenant's weighted max-min fair share of
// capacity (requests per second): no tenant gets more than it offers, and
// what some leave is shared among the others by weight (water-filling).
func fairAllocation(capacity float64, tenants []tenantLoad) []float64 {
	alloc := make([]float64, len(tenants))
	done := make([]bool, len(tenants))
	left := capacity
	for {
		weights := 0.0
		for i, t := range tenants {
			if !done[i] {
				weights += float64(max(t.weight, 1))
			}
		}
		if weights == 0 {
			return alloc
		}
		level, capped := left/weights, false
		for i, t := range tenants {
			if !done[i] && t.rate <= level*float64(max(t.weight, 1)) {
				alloc[i], done[i], capped = t.rate, true, true
				left -= t.rate
			}
		}
		if !capped {
			for i, t := range tenants {
				if !done[i] {
					alloc[i] = level * float64(max(t.weight, 1))
				}
			}
			return alloc
		}
	}
}

// jain returns Jain's fairness index of xs: 1 when all are equal, 1/n when
// one has everything.
func jain(xs []float64) float64 {
	var sum, squares float64
	for _, x := range xs {
		sum += x
		squares += x * x
	}
	if squares == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * squares)
}
