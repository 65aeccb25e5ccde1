package main

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// httpRun is one run of the real-HTTP benchmark: a backend of Workers
// goroutines on loopback, behind a Limiter (nil: none), driven by an
// open-loop Poisson load; the service time changes to Then at At, if set.
type httpRun struct {
	Workers int
	Service time.Duration
	Then    time.Duration // the service time from At on (0: no change)
	At      time.Duration
	Load    float64 // arrivals, as a multiple of Workers/Service
	Warmup  time.Duration
	Span    time.Duration
	Timeout time.Duration
	Seed    uint64
}

// httpResult is what the requests that arrived in the measured span saw.
type httpResult struct {
	Arrived, Good, Shed, Late int
	P99                       time.Duration // of the requests served (503s excluded); a timeout counts as Timeout
	Limits                    []limitPoint  // the limit every 100ms
	FinalLimit                int
}

type limitPoint struct {
	At    time.Duration
	Limit int
}

// runHTTP runs r against the limiter l makes (nil: no limiter).
func runHTTP(r httpRun, l *backpressure.Limiter) (httpResult, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return httpResult{}, err
	}
	b := newBackend(r, l)
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(served) }()
	defer func() {
		// Handlers of abandoned requests still wait for their work: let
		// them finish before the workers stop.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
		b.close()
	}()

	tr := &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: r.Timeout}
	url := "http://" + ln.Addr().String() + "/"

	start := time.Now()
	b.start.Store(start.UnixNano())
	var res httpResult
	var mu sync.Mutex
	var latencies []time.Duration
	var wg sync.WaitGroup
	stopTrace := traceLimit(l, start, &res.Limits, &mu)
	rng := rand.New(rand.NewPCG(r.Seed, 0x6077))
	rate := r.Load * float64(r.Workers) / r.Service.Seconds()
	end := r.Warmup + r.Span
	for next := time.Duration(0); next < end; next += time.Duration(rng.ExpFloat64() / rate * float64(time.Second)) {
		if d := time.Until(start.Add(next)); d > 0 {
			time.Sleep(d) // open loop: behind schedule, send at once
		}
		measured := next >= r.Warmup
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
			case status == http.StatusOK && lat <= r.Timeout:
				res.Good++
			default:
				res.Late++
				lat = r.Timeout
			}
			latencies = append(latencies, lat)
		})
	}
	wg.Wait()
	stopTrace()
	res.P99 = percentile(latencies, 0.99)
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

// backend is the service: a limiter in front of Workers goroutines that
// take requests first come first served. A request whose client has gone
// is worked on regardless, as real services do, and holds its slot until
// done.
type backend struct {
	r       httpRun
	l       *backpressure.Limiter
	queue   chan job
	start   atomic.Int64 // when the run started, in Unix nanoseconds
	workers sync.WaitGroup
	mu      sync.Mutex
	rng     *rand.Rand
}

type job struct{ done chan struct{} }

func newBackend(r httpRun, l *backpressure.Limiter) *backend {
	b := &backend{r: r, l: l, queue: make(chan job, 1<<16), rng: rand.New(rand.NewPCG(r.Seed, 0xbac))}
	for range r.Workers {
		b.workers.Go(b.work)
	}
	return b
}

func (b *backend) close() {
	close(b.queue)
	b.workers.Wait()
}

func (b *backend) work() {
	for j := range b.queue {
		time.Sleep(b.serviceTime())
		close(j.done)
	}
}

// serviceTime draws a log-normal service time (σ 0.5) around the mean in
// force now.
func (b *backend) serviceTime() time.Duration {
	mean := b.r.Service
	if b.r.Then > 0 && time.Since(time.Unix(0, b.start.Load())) >= b.r.At {
		mean = b.r.Then
	}
	const σ = 0.5
	b.mu.Lock()
	z := b.rng.NormFloat64()
	b.mu.Unlock()
	return time.Duration(math.Exp(math.Log(float64(mean)) - σ*σ/2 + σ*z))
}

func (b *backend) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var p backpressure.Permit
	if b.l != nil {
		var err error
		// Not the request's context: the work goes on after the client
		// gives up, and so does its slot.
		p, err = b.l.Acquire(context.WithoutCancel(req.Context()), "", core.Default)
		var rej *backpressure.ShedError
		if errors.As(err, &rej) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
	}
	j := job{done: make(chan struct{})}
	b.queue <- j
	<-j.done
	p.Done(core.Succeeded)
	w.WriteHeader(http.StatusOK)
}
