package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sluice-go/sluice/benchmarks/overload/sim"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// httpResult is what the requests that arrived in the measured span saw.
type httpResult struct {
	Arrived, Good, Shed, Late int
	// Failed counts the requests that failed before the client's timeout
	// (a harness fault, such as a refused connection), within Late.
	Failed int
	// Goodput is Good as a share of the backend's capacity over the span
	// (sim.Capacity).
	Goodput float64
	// P99 is measured as sim measures it, on the server: from a request's
	// arrival at the handler to the end of its work, uncapped, the requests
	// its client abandoned included, 503s excluded; a request still
	// unfinished when the run stops (sim's end + 2×Timeout) counts with
	// the time it had waited by then.
	P99 time.Duration
	// ClientP99 is the p99 the clients saw (503s excluded), a client's
	// timeout counting as the timeout.
	ClientP99  time.Duration
	Limits     []limitPoint // the limit every 100ms
	FinalLimit int
	// Lag is the furthest the load fell behind its schedule: past a few
	// milliseconds, the machine did not drive the offered load.
	Lag time.Duration
	// Oversleep is the mean time a worker held a request past its drawn
	// service time (timer slack, a busy machine).
	Oversleep time.Duration
	Workers   int // the backend's workers at the end
}

type limitPoint struct {
	At    time.Duration
	Limit int
}

// validate checks cfg as sim.Run does, and returns it with Service set to
// its routes' mean, if it has routes.
func validate(cfg sim.Config) (sim.Config, error) {
	if len(cfg.Routes) > 0 {
		cfg.Service = routesMean(cfg.Routes)
	}
	if cfg.Workers < 1 || cfg.Service <= 0 || cfg.Load <= 0 || cfg.Timeout <= 0 || cfg.Span <= 0 || cfg.Spread < 0 ||
		!(cfg.Pareto == 0 || cfg.Pareto > 1) || !(cfg.Hang >= 0 && cfg.Hang < 1) {
		return cfg, errors.New("http: invalid config")
	}
	return cfg, nil
}

// routesMean is the mean service time of a mix of routes, as sim has it.
func routesMean(routes []sim.Route) time.Duration {
	var sum, shares float64
	for _, r := range routes {
		sum += r.Share * float64(r.Service)
		shares += r.Share
	}
	return time.Duration(sum / shares)
}

// arrivalRate is the arrivals per second at load, as sim.interarrival has
// it: load × the requests the backend completes per second at the start,
// hung ones included.
func arrivalRate(cfg sim.Config, load float64) float64 {
	mean := (1-cfg.Hang)*cfg.Service.Seconds() + cfg.Hang*cfg.Timeout.Seconds()
	return load * float64(cfg.Workers) / mean
}

// peakRate is the highest arrival rate cfg offers.
func peakRate(cfg sim.Config) float64 {
	cfg, _ = validate(cfg)
	return arrivalRate(cfg, sim.PeakLoad(cfg))
}

// loadAt is the offered load in force at t.
func loadAt(cfg sim.Config, t time.Duration) float64 {
	load := cfg.Load
	for _, ch := range cfg.Changes {
		if ch.At <= t && ch.Load > 0 {
			load = ch.Load
		}
	}
	return load
}

// runHTTP runs cfg over loopback HTTP against the limiter l (nil: none):
// an open-loop Poisson load, at the rate and with the service times sim
// draws, and cfg's Changes applied at their times. Trace is ignored.
func runHTTP(cfg sim.Config, l *backpressure.Limiter) (httpResult, error) {
	cfg, err := validate(cfg)
	if err != nil {
		return httpResult{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return httpResult{}, err
	}
	b := newBackend(cfg, l)
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(served) }()

	tr := &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute}
	client := &http.Client{Transport: tr, Timeout: cfg.Timeout}
	base := "http://" + ln.Addr().String()

	start := time.Now()
	stopChanges := b.applyChanges(start, cfg.Changes)
	var res httpResult
	var mu sync.Mutex
	var latencies []time.Duration
	var wg sync.WaitGroup
	stopTrace := traceLimit(l, start, &res.Limits, &mu)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6077))
	end := cfg.Warmup + cfg.Span
	next := max(time.Duration(rng.ExpFloat64()/arrivalRate(cfg, cfg.Load)*float64(time.Second)), 1)
	for ; next < end; next += max(time.Duration(rng.ExpFloat64()/arrivalRate(cfg, loadAt(cfg, next))*float64(time.Second)), 1) {
		// Open loop: behind schedule, send at once.
		if d := time.Until(start.Add(next)); d > 0 {
			time.Sleep(d)
		}
		measured := next >= cfg.Warmup
		url := base + "/"
		if measured {
			url = base + measuredPath
		}
		if lag := time.Since(start) - next; measured && lag > res.Lag {
			mu.Lock()
			res.Lag = lag
			mu.Unlock()
		}
		wg.Go(func() {
			status, lat := get(client, url)
			if !measured {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			res.Arrived++
			switch {
			case status == http.StatusServiceUnavailable:
				res.Shed++
				return
			case status == http.StatusOK && lat <= cfg.Timeout:
				res.Good++
			default:
				if status == 0 && lat < cfg.Timeout {
					res.Failed++
				}
				res.Late++
				lat = cfg.Timeout
			}
			latencies = append(latencies, lat)
		})
	}
	// Every client has its answer or has given up. As in sim, the backend
	// works on until the measured requests are done or sim's run would
	// stop; then stop it, abandoning the rest.
	wg.Wait()
	b.drain(start.Add(end + 2*cfg.Timeout))
	stopTrace()
	stopChanges()
	b.close()
	// A connection dialed but never used is new to the server, which waits
	// 5 s before it counts as idle: close the clients' first.
	tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(ctx)
	<-served
	b.handlers.Wait()
	tr.CloseIdleConnections()
	if err != nil {
		return httpResult{}, err
	}

	res.ClientP99 = percentile(latencies, 0.99)
	res.P99 = b.p99()
	res.Goodput = float64(res.Good) / sim.Capacity(cfg, cfg.Warmup, end)
	res.Oversleep, res.Workers = b.stats()
	if l != nil {
		res.FinalLimit = l.Limit()
	}
	return res, nil
}

// get sends one request, and returns its status (0 if it failed, as on
// the client's timeout) and latency.
func get(c *http.Client, url string) (int, time.Duration) {
	t0 := time.Now()
	resp, err := c.Get(url)
	if err != nil {
		return 0, time.Since(t0)
	}
	_ = resp.Body.Close()
	return resp.StatusCode, time.Since(t0)
}

// traceLimit samples l's limit every 100ms into points until stopped.
func traceLimit(l *backpressure.Limiter, start time.Time, points *[]limitPoint, mu *sync.Mutex) (stop func()) {
	if l == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				mu.Lock()
				*points = append(*points, limitPoint{At: now.Sub(start), Limit: l.Limit()})
				mu.Unlock()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// backend is the service: a limiter in front of a pool of workers that
// take requests first come first served. The pool is a FIFO counting
// semaphore whose size a Change of Workers sets at run time; each request's
// handler works in the slot it holds. A request whose client has gone is
// worked on regardless, as real services do, and holds its slot until
// done.
type backend struct {
	cfg      sim.Config
	l        *backpressure.Limiter
	handlers sync.WaitGroup
	quit     chan struct{} // closed: stop, abandoning the work in hand

	mu      sync.Mutex
	workers int             // the pool's size now
	busy    int             // slots held
	waiting []chan struct{} // FIFO; a slot is handed over by closing
	service time.Duration   // the mean service time now
	rng     *rand.Rand
	slept   time.Duration // worked past the drawn service times, in all
	served  int

	measuring int             // measured requests in the handler
	idle      chan struct{}   // a token when measuring falls to 0
	latencies []time.Duration // of the measured requests, 503s excluded
}

// measuredPath is the path of a request that arrived in the measured span.
const measuredPath = "/m"

func newBackend(cfg sim.Config, l *backpressure.Limiter) *backend {
	return &backend{cfg: cfg, l: l, quit: make(chan struct{}), workers: cfg.Workers, service: cfg.Service,
		rng: rand.New(rand.NewPCG(cfg.Seed, 0xbac)), idle: make(chan struct{}, 1)}
}

// enter counts a measured request into the handler.
func (b *backend) enter() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.measuring++
}

// leave counts a measured request out of the handler, with its latency
// unless shed.
func (b *backend) leave(latency time.Duration, shed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !shed {
		b.latencies = append(b.latencies, latency)
	}
	b.measuring--
	if b.measuring == 0 {
		select {
		case b.idle <- struct{}{}:
		default:
		}
	}
}

// drain waits until no measured request is in the handler, or deadline.
func (b *backend) drain(deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		b.mu.Lock()
		n := b.measuring
		b.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-b.idle:
		case <-t.C:
			return
		}
	}
}

// p99 is the measured requests' p99, from their arrival at the handler.
func (b *backend) p99() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return percentile(b.latencies, 0.99)
}

// close abandons the work in hand and the requests waiting: their handlers
// return at once.
func (b *backend) close() { close(b.quit) }

// applyChanges applies chs at their times after start, from one goroutine,
// until stopped.
func (b *backend) applyChanges(start time.Time, chs []sim.Change) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, ch := range chs {
			t := time.NewTimer(time.Until(start.Add(ch.At)))
			select {
			case <-done:
				t.Stop()
				return
			case <-t.C:
				b.apply(ch)
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// apply changes the backend as sim does: a request that starts its service
// from now on takes the new service time; a pool made larger starts the
// oldest waiting at once; one made smaller lets the work in hand finish.
func (b *backend) apply(ch sim.Change) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch.Service > 0 {
		b.service = ch.Service
	}
	if ch.Workers > 0 {
		b.workers = ch.Workers
		b.grant()
	}
}

// grant hands free slots to the oldest waiting. b.mu is held.
func (b *backend) grant() {
	for b.busy < b.workers && len(b.waiting) > 0 {
		close(b.waiting[0])
		b.waiting[0] = nil
		b.waiting = b.waiting[1:]
		b.busy++
	}
}

// acquire waits for a slot, first come first served, and returns the
// service time drawn as the work starts; false if the backend closed first.
func (b *backend) acquire() (time.Duration, bool) {
	b.mu.Lock()
	if b.busy < b.workers && len(b.waiting) == 0 {
		b.busy++
		d := b.serviceTime()
		b.mu.Unlock()
		return d, true
	}
	ready := make(chan struct{})
	b.waiting = append(b.waiting, ready)
	b.mu.Unlock()
	select {
	case <-ready:
	case <-b.quit:
		return 0, false // the slot, if granted meanwhile, goes with the backend
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.serviceTime(), true
}

func (b *backend) release(worked, drawn time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.busy--
	b.slept += worked - drawn
	b.served++
	b.grant()
}

func (b *backend) stats() (oversleep time.Duration, workers int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.slept / time.Duration(max(b.served, 1)), b.workers
}

// serviceTime draws one request's service time as sim does, around the
// mean in force. b.mu is held.
func (b *backend) serviceTime() time.Duration { return b.cfg.ServiceTime(b.rng, b.service) }

// ServeHTTP times a measured request from its arrival to the end of its
// work (or the backend's stop), as sim does, before it answers.
func (b *backend) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b.handlers.Add(1)
	defer b.handlers.Done()
	arrived := time.Now()
	measured := req.URL.Path == measuredPath
	if measured {
		b.enter()
	}
	status := b.serve(req)
	if measured {
		b.leave(time.Since(arrived), status == http.StatusServiceUnavailable)
	}
	w.WriteHeader(status)
}

// serve admits req through the limiter, works on it in a slot of the pool,
// and returns the status to answer with.
func (b *backend) serve(req *http.Request) int {
	var p backpressure.Permit
	if b.l != nil {
		var err error
		// Not the request's context: the work goes on after the client
		// gives up, and so does its slot.
		p, err = b.l.Acquire(context.WithoutCancel(req.Context()), "", core.Default)
		var rej *backpressure.ShedError
		if errors.As(err, &rej) {
			return http.StatusServiceUnavailable
		}
		if err != nil {
			return http.StatusInternalServerError
		}
	}
	defer p.Done(core.Succeeded)
	d, ok := b.acquire()
	if !ok {
		return http.StatusInternalServerError
	}
	t0 := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-b.quit:
		return http.StatusInternalServerError
	}
	b.release(time.Since(t0), d)
	return http.StatusOK
}
