// Command fairness measures fair shares (backpressure.Config.Fair) over
// loopback HTTP: tenants named by an X-Tenant header send open-loop Poisson
// load to a sluicehttp server whose Concurrency limit (a static limit at
// the backend's C workers, a queue of 4·C for at most a second) keys on the
// header; the handler takes a log-normal service time. Each scenario runs
// with fair shares and, for comparison, first come first served; clients
// give up after a second.
//
//	cd benchmarks && go run ./fairness
//
// Everything listens on 127.0.0.1 and the run is bounded (about 90 s).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core/backpressure"
)

type tenant struct {
	key    string
	weight int
	rate   float64 // requests/s
}

type config struct {
	workers  int
	service  time.Duration
	warmup   time.Duration
	span     time.Duration
	timeout  time.Duration
	fair     bool
	tenants  []tenant
	seed     uint64
	capacity float64
}

type tenantResult struct {
	sent, good, shed, timeouts int
	p99                        time.Duration
}

func main() {
	workers := flag.Int("workers", 10, "the backend's concurrency C, and the static limit")
	service := flag.Duration("service", 50*time.Millisecond, "the mean service time")
	span := flag.Duration("span", 10*time.Second, "measured time per run, after 2 s of warm-up")
	seed := flag.Uint64("seed", 1, "the seed of arrivals and service times")
	flag.Parse()
	base := config{workers: *workers, service: *service, warmup: 2 * time.Second, span: *span, timeout: time.Second, seed: *seed}
	base.capacity = float64(base.workers) / base.service.Seconds()
	share := base.capacity / 4

	noisy := []tenant{{key: "a", rate: 10 * share}, {key: "b", rate: 0.9 * share}, {key: "c", rate: 0.9 * share}, {key: "d", rate: 0.9 * share}}
	weighted := []tenant{{key: "w1", weight: 1}, {key: "w2", weight: 2}, {key: "w3", weight: 3}, {key: "w4", weight: 4}}
	for i := range weighted {
		weighted[i].rate = base.capacity / 2
	}
	fmt.Printf("Backend: %d workers, %v mean service time (σ 0.3): %.0f requests/s; a queue of %d for at most 1 s; clients give up after %v; %v measured after %v, seed %d.\n\n",
		base.workers, base.service, base.capacity, 4*base.workers, base.timeout, base.span, base.warmup, base.seed)
	alone := run(with(base, true, noisy[1:]))
	for _, fair := range []bool{true, false} {
		print(fmt.Sprintf("a at 10x its share, b, c and d at 0.9x theirs, fair=%v", fair), with(base, fair, noisy), run(with(base, fair, noisy)), alone)
	}
	for _, fair := range []bool{true, false} {
		print(fmt.Sprintf("weights 1:2:3:4, each offering half the capacity, fair=%v", fair), with(base, fair, weighted), run(with(base, fair, weighted)), nil)
	}
}

func with(c config, fair bool, ts []tenant) config {
	c.fair, c.tenants = fair, ts
	return c
}

func run(cfg config) []tenantResult {
	weights := map[string]int{}
	for _, t := range cfg.tenants {
		if t.weight > 1 && cfg.fair {
			weights[t.key] = t.weight
		}
	}
	slots, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(cfg.workers), Queue: 4 * cfg.workers,
		MaxWait: time.Second, Fair: cfg.fair, Weights: weights})
	check(err)
	mw, err := sluicehttp.New(admit.Config{Concurrency: slots, ConcurrencyKey: admit.Header("X-Tenant")})
	check(err)
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, _ := time.ParseDuration(r.Header.Get("X-Service"))
		time.Sleep(d)
		_, _ = w.Write([]byte("ok"))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	srv := &http.Server{Handler: mw(work), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/"
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2048}, Timeout: cfg.timeout}
	defer hc.CloseIdleConnections()

	type answer struct {
		status  int
		latency time.Duration
	}
	answers := make([][]answer, len(cfg.tenants))
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	end := cfg.warmup + cfg.span
	for i, t := range cfg.tenants {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(cfg.seed, uint64(i)+1))
			var at time.Duration
			var inner sync.WaitGroup
			for {
				at += time.Duration(rng.ExpFloat64() / t.rate * float64(time.Second))
				if at >= end {
					break
				}
				σ := 0.3
				service := time.Duration(math.Exp(math.Log(float64(cfg.service)) - σ*σ/2 + σ*rng.NormFloat64()))
				time.Sleep(time.Until(start.Add(at)))
				measure := at >= cfg.warmup
				inner.Go(func() {
					req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
					req.Header.Set("X-Tenant", t.key)
					req.Header.Set("X-Service", service.String())
					sent := time.Now()
					a := answer{}
					if resp, err := hc.Do(req); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						a.status = resp.StatusCode
					}
					a.latency = time.Since(sent)
					if measure {
						mu.Lock()
						answers[i] = append(answers[i], a)
						mu.Unlock()
					}
				})
			}
			inner.Wait()
		})
	}
	wg.Wait()
	res := make([]tenantResult, len(cfg.tenants))
	for i, as := range answers {
		var lat []time.Duration
		for _, a := range as {
			res[i].sent++
			switch {
			case a.status == http.StatusOK:
				lat = append(lat, a.latency)
				if a.latency <= cfg.timeout {
					res[i].good++
				}
			case a.status == 0:
				res[i].timeouts++
			default:
				res[i].shed++
			}
		}
		res[i].p99 = quantile(lat, 0.99)
	}
	return res
}

// fairShares returns each tenant's weighted max-min fair share of the
// capacity, given what it offered (requests/s).
func fairShares(capacity float64, ts []tenant, offered []float64) []float64 {
	alloc := make([]float64, len(ts))
	done := make([]bool, len(ts))
	left := capacity
	for {
		weights := 0.0
		for i, t := range ts {
			if !done[i] {
				weights += float64(max(t.weight, 1))
			}
		}
		if weights == 0 {
			return alloc
		}
		level, capped := left/weights, false
		for i, t := range ts {
			if !done[i] && offered[i] <= level*float64(max(t.weight, 1)) {
				alloc[i], done[i], capped, left = offered[i], true, true, left-offered[i]
			}
		}
		if !capped {
			for i, t := range ts {
				if !done[i] {
					alloc[i] = level * float64(max(t.weight, 1))
				}
			}
			return alloc
		}
	}
}

func print(title string, cfg config, res, alone []tenantResult) {
	secs := cfg.span.Seconds()
	offered := make([]float64, len(res))
	for i, r := range res {
		offered[i] = float64(r.sent) / secs
	}
	alloc := fairShares(cfg.capacity, cfg.tenants, offered)
	fmt.Printf("%s\n\n| tenant | weight | offered | fair share | goodput | goodput / share | 503s | timeouts | p99 | p99 / alone |\n|---|---|---|---|---|---|---|---|---|---|\n", title)
	var sum, squares float64
	for i, r := range res {
		x := float64(r.good) / secs / alloc[i]
		sum, squares = sum+x, squares+x*x
		vs := "-"
		if j := i - (len(res) - len(alone)); alone != nil && j >= 0 && alone[j].p99 > 0 {
			vs = fmt.Sprintf("%.2f (alone %v)", float64(r.p99)/float64(alone[j].p99), alone[j].p99.Round(time.Millisecond))
		}
		fmt.Printf("| %s | %d | %.0f/s | %.0f/s | %.1f/s | %.3f | %.1f%% | %d | %v | %s |\n", cfg.tenants[i].key, max(cfg.tenants[i].weight, 1),
			offered[i], alloc[i], float64(r.good)/secs, x, 100*float64(r.shed)/float64(max(r.sent, 1)), r.timeouts, r.p99.Round(time.Millisecond), vs)
	}
	fmt.Printf("\nJain's index of goodput over fair share: %.4f\n\n", sum*sum/(float64(len(res))*squares))
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(int(math.Ceil(q*float64(len(ds))))-1, len(ds)-1)]
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "fairness:", err)
		os.Exit(1)
	}
}
