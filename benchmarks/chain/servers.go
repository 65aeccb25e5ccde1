package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/client"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// serviceC serves capacity requests/s with a token bucket (q=capacity,
// w=1s), until it is told to serve half as many: 429 + Retry-After +
// RateLimit beyond, as a sluice server answers.
type serviceC struct {
	srv     *http.Server
	url     string
	half    atomic.Bool
	served  [2]atomic.Int64 // by phase
	limited [2]atomic.Int64 // 429s, by phase
	store   *memory.Store
}

func startC(capacity float64) (*serviceC, error) {
	c := &serviceC{}
	var err error
	if c.store, err = memory.New(); err != nil {
		return nil, err
	}
	full, err := cMiddleware(c.store, "c-full", capacity)
	if err != nil {
		return nil, err
	}
	half, err := cMiddleware(c.store, "c-half", capacity/2)
	if err != nil {
		return nil, err
	}
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond) // the work
		_, _ = w.Write([]byte("ok"))
	})
	fullH, halfH := full(work), half(work)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		phase, h := 0, fullH
		if c.half.Load() {
			phase, h = 1, halfH
		}
		rec := &statusWriter{ResponseWriter: w, status: 200}
		h.ServeHTTP(rec, r)
		if rec.status == http.StatusTooManyRequests {
			c.limited[phase].Add(1)
		} else {
			c.served[phase].Add(1)
		}
	})
	c.url, c.srv, err = listen(handler)
	return c, err
}

func cMiddleware(store core.Store, name string, rate float64) (func(http.Handler) http.Handler, error) {
	q := int64(math.Round(rate))
	p, err := core.NewPolicy(core.PolicyConfig{Name: name, Algorithm: core.TokenBucket, Quota: q, Period: time.Second, Burst: q})
	if err != nil {
		return nil, err
	}
	lim, err := core.NewLimiter(store)
	if err != nil {
		return nil, err
	}
	// One key for every caller: C's capacity is global.
	return sluicehttp.New(admit.Config{Limiter: lim, Rules: []admit.Rule{{Policy: p, Key: admit.Func(func(*admit.Request) (string, error) { return "all", nil })}}})
}

// serviceB is the sluice-limited server whose handler calls C once.
type serviceB struct {
	srv      *http.Server
	url      string
	inFlight atomic.Int64
	maxIn    atomic.Int64
	mu       sync.Mutex
	admitted []time.Time // requests its handler ran, to see admission follow C
	start    time.Time
}

func startB(cURL string, link, unpaced bool) (*serviceB, error) {
	b := &serviceB{start: time.Now()}
	base := &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 0}
	var opts []client.Option
	if unpaced {
		opts = append(opts, client.WithoutPacing())
	}
	t, err := client.NewTransport(base, opts...)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: t, Timeout: 20 * time.Second}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /call", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.admitted = append(b.admitted, time.Now())
		b.mu.Unlock()
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, cURL, nil)
		resp, err := hc.Do(req)
		if err != nil {
			unavailable(w, err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			w.Header().Set("Retry-After", orOne(resp.Header.Get("Retry-After")))
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	own, err := core.NewPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 10_000, Period: time.Second, Burst: 10_000})
	if err != nil {
		return nil, err
	}
	store, err := memory.New()
	if err != nil {
		return nil, err
	}
	lim, err := core.NewLimiter(store)
	if err != nil {
		return nil, err
	}
	cfg := admit.Config{Limiter: lim, Rules: []admit.Rule{{Policy: own, Key: admit.ClientIP()}}}
	if link {
		host := cURL[len("http://"):]
		cfg.Dependencies = []admit.Dependency{{Name: "c", Routes: []string{"GET /call"}, Capacity: t.HostCapacity(host)}}
	}
	mw, err := sluicehttp.New(cfg)
	if err != nil {
		return nil, err
	}
	limited := mw(mux)
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := b.inFlight.Add(1)
		for m := b.maxIn.Load(); n > m && !b.maxIn.CompareAndSwap(m, n); m = b.maxIn.Load() {
		}
		defer b.inFlight.Add(-1)
		limited.ServeHTTP(w, r)
	})
	b.url, b.srv, err = listen(counted)
	return b, err
}

// unavailable answers a call to C that failed: 503 at once, with the wait
// pacing asked for when it refused the call.
func unavailable(w http.ResponseWriter, err error) {
	ra := "1"
	var pe *client.PaceError
	if errors.As(err, &pe) && pe.Wait > time.Second {
		ra = strconv.FormatInt(int64(math.Ceil(pe.Wait.Seconds())), 10)
	}
	w.Header().Set("Retry-After", ra)
	w.WriteHeader(http.StatusServiceUnavailable)
}

func orOne(s string) string {
	if s == "" {
		return "1"
	}
	return s
}

func listen(h http.Handler) (string, *http.Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return fmt.Sprintf("http://%s", ln.Addr()), srv, nil
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
