package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/client"
)

// The transport retries the 503 and returns the eventual answer; the hooks
// show what happened.
func ExampleNewTransport() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()

	tr, err := client.NewTransport(nil,
		client.WithBackoff(client.Backoff{Base: time.Millisecond, Cap: 10 * time.Millisecond}),
		client.WithHooks(client.Hooks{
			OnRetry: func(e client.RetryEvent) {
				fmt.Printf("attempt %d: %s, retrying\n", e.Attempt, e.Reason)
			},
		}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	hc := &http.Client{Transport: tr}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
	// Output:
	// attempt 1: 503 Service Unavailable, retrying
	// attempt 2: 503 Service Unavailable, retrying
	// 200 OK
}

// Bad options are reported by the constructor, all at once, rather than
// clamped into some other limit.
func ExampleNewTransport_invalidOptions() {
	_, err := client.NewTransport(nil,
		client.WithMaxAttempts(0),
		client.WithBackoff(client.Backoff{Base: time.Second, Cap: time.Millisecond}),
	)
	fmt.Println(errors.Is(err, client.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// client: invalid configuration: WithMaxAttempts(0): at least 1 attempt is needed
	// WithBackoff: client: invalid configuration: Backoff.Cap 1ms is below Base 1s
}

// The un-jittered schedule, and a reproducible full-jitter one: Delay is a
// pure function of its random source.
func ExampleBackoff() {
	b := client.Backoff{Base: 100 * time.Millisecond, Cap: 2 * time.Second, Jitter: client.NoJitter}
	var plain []time.Duration
	for retry := range 6 {
		plain = append(plain, b.Delay(retry, 0, nil))
	}
	fmt.Println(plain)

	// Full jitter: uniform under each ceiling, the same for the same source.
	b.Jitter = client.FullJitter
	r1 := rand.New(rand.NewPCG(1, 2)) // production code seeds from crypto/rand
	r2 := rand.New(rand.NewPCG(1, 2))
	for retry := range 6 {
		d := b.Delay(retry, 0, r1)
		fmt.Println(d < b.Ceiling(retry), d == b.Delay(retry, 0, r2))
	}
	// Output:
	// [100ms 200ms 400ms 800ms 1.6s 2s]
	// true true
	// true true
	// true true
	// true true
	// true true
	// true true
}

// A breaker around any call: after two failures in a row it fails calls at
// once, without running them.
func ExampleBreaker() {
	b, err := client.NewBreaker(client.BreakerConfig{
		Name:                "inventory",
		ConsecutiveFailures: 2,
		OpenTimeout:         time.Minute,
		OnStateChange: func(name string, from, to client.BreakerState) {
			fmt.Printf("%s: %s -> %s\n", name, from, to)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	down := errors.New("connection refused")
	for range 3 {
		err := b.Execute(context.Background(), func(context.Context) error { return down })
		var open *client.CircuitOpenError
		if errors.As(err, &open) {
			fmt.Printf("rejected without calling: %s is %s\n", open.Name, open.State)
			continue
		}
		fmt.Println(err)
	}
	// Output:
	// connection refused
	// inventory: closed -> open
	// connection refused
	// rejected without calling: inventory is open
}

// CallThrough returns the value of the guarded function.
func ExampleCallThrough() {
	b, err := client.NewBreaker(client.BreakerConfig{Name: "prices"})
	if err != nil {
		fmt.Println(err)
		return
	}
	price, err := client.CallThrough(context.Background(), b, func(context.Context) (int, error) {
		return 42, nil
	})
	fmt.Println(price, err, b.State())
	// Output: 42 <nil> closed
}

// virtualClock is a Clock whose Sleep moves time on at once, so that the
// pacing example below runs instantly and prints the same waits every
// time. Production code keeps the default SystemClock.
type virtualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *virtualClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := t.Sub(c.Now())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(max(d, 0))
	return ctx.Err()
}

// A server that reports its policy, a bucket of 10 refilled at 2 per
// second, is sent one request every 500 ms, its sustained rate, once the
// first answer has told the transport of it, instead of ten at once.
func ExamplePacingConfig() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Policy", `"per-ip";q=10;w=5`)
		w.Header().Set("RateLimit", `"per-ip";r=9;t=1`)
	}))
	defer srv.Close()

	tr, err := client.NewTransport(nil,
		client.WithPacing(client.PacingConfig{BurstFraction: 0.1}), // the default: a tenth of q at once
		client.WithClock(&virtualClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}),
		client.WithHooks(client.Hooks{
			OnPace: func(e client.PaceEvent) {
				fmt.Printf("%s: %s at %.0f/s, waiting %v\n", e.Reason, e.Policy, e.Rate, e.Delay)
			},
		}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	hc := &http.Client{Transport: tr}
	for range 4 {
		resp, err := hc.Get(srv.URL)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
	}
	// Output:
	// quota: per-ip at 2/s, waiting 500ms
	// quota: per-ip at 2/s, waiting 500ms
}

// A service whose handler calls a dependency through the Transport links
// the dependency's capacity to its own admission: once the dependency has
// reported a quota of 50 a second, the routes that call it admit as many,
// and answer the rest 503 at once (see admit.Config.Dependencies).
func ExampleTransport_HostCapacity() {
	dep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Policy", `"upstream";q=50;w=1`)
		w.Header().Set("RateLimit", `"upstream";r=49;t=1`)
	}))
	defer dep.Close()

	tr, err := client.NewTransport(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	host := strings.TrimPrefix(dep.URL, "http://")
	capacity := tr.HostCapacity(host)
	cfg := admit.Config{Dependencies: []admit.Dependency{{
		Name: "upstream", Routes: []string{"POST /checkout"}, Capacity: capacity,
	}}}
	if _, err := httplimit.New(cfg); err != nil {
		fmt.Println(err)
		return
	}

	rate, closed, reason := capacity.Capacity(time.Now())
	fmt.Printf("before any answer: %v/s, closed %v, %q\n", rate, closed, reason)
	resp, err := (&http.Client{Transport: tr}).Get(dep.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	rate, closed, reason = capacity.Capacity(time.Now())
	fmt.Printf("after one: %v/s, closed %v, %q\n", rate, closed, reason)
	// Output:
	// before any answer: 0/s, closed 0s, ""
	// after one: 50/s, closed 0s, "quota"
}

// AfterFunc runs f on a real timer: the client arms none of its own.
func (c *virtualClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return time.AfterFunc(d, f).Stop
}
