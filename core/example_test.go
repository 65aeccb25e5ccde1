package core_test

import (
	"context"
	"fmt"
	"github.com/sluice-go/sluice/sluicetest"
	"slices"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// The reference's worked example: a token bucket of capacity 10 refilled at
// 2 per second. Fifteen instant requests: ten pass, five are denied.
func ExampleLimiter() {
	policy, err := core.NewPolicy(core.PolicyConfig{
		Name:      "per-ip",
		Algorithm: core.TokenBucket,
		Quota:     2,
		Period:    time.Second,
		Burst:     10,
	})
	if err != nil {
		panic(err)
	}
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := core.NewLimiter(store)
	if err != nil {
		panic(err)
	}

	passed := 0
	var last core.Decision
	for range 15 {
		last, _ = limiter.Take(context.Background(), core.Request{Key: "203.0.113.7", Policy: policy, Cost: 1})
		if last.Allowed {
			passed++
		}
	}
	fmt.Println("passed:", passed, "denied:", 15-passed)
	fmt.Println("retry after:", last.RetryAfter)

	clock.Advance(3 * time.Second)
	d, _ := limiter.Take(context.Background(), core.Request{Key: "203.0.113.7", Policy: policy, Cost: 1})
	fmt.Println("after 3s, remaining after one more:", d.Remaining)
	// Output:
	// passed: 10 denied: 5
	// retry after: 500ms
	// after 3s, remaining after one more: 5
}

// Layered limits decide as one: a request denied by the user limit takes
// nothing from the per-IP limit.
func ExampleLimiter_TakeAll() {
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 100, Period: time.Minute, Burst: 100})
	perUser := core.MustPolicy(core.PolicyConfig{Name: "per-user", Algorithm: core.FixedWindow, Quota: 2, Period: time.Minute})
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) // tests only; omit for the real clock
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	limiter, _ := core.NewLimiter(store)

	reqs := []core.Request{
		{Key: "198.51.100.4", Policy: perIP, Cost: 1},
		{Key: "alice", Policy: perUser, Cost: 1},
	}
	ds := make([]core.Decision, len(reqs))
	for range 3 {
		d, _ := limiter.TakeAll(context.Background(), reqs, ds)
		fmt.Printf("allowed=%v decided-by=%s per-ip-remaining=%d\n", d.Allowed, d.Policy.Name(), ds[0].Remaining)
	}
	// Output:
	// allowed=true decided-by=per-user per-ip-remaining=99
	// allowed=true decided-by=per-user per-ip-remaining=98
	// allowed=false decided-by=per-user per-ip-remaining=98
}

// A reservation for work whose cost is known only afterwards, such as the
// tokens a language model generates.
func ExampleReservation() {
	tokens := core.MustPolicy(core.PolicyConfig{Name: "tokens", Algorithm: core.TokenBucket, Quota: 10_000, Period: time.Minute, Burst: 10_000})
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) // tests only; omit for the real clock
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	limiter, _ := core.NewLimiter(store)
	ctx := context.Background()

	res, _ := limiter.Reserve(ctx, []core.Request{{Key: "team-a", Policy: tokens, Cost: 4000}}, nil)
	if !res.Decision.Allowed {
		return
	}
	// ... the work runs and uses 1,250 tokens ...
	_ = res.Reconcile(ctx, 1250)

	d, _ := limiter.Take(ctx, core.Request{Key: "team-a", Policy: tokens, Cost: 1})
	fmt.Println("remaining:", d.Remaining)
	// Output:
	// remaining: 8749
}

// A shaping queue in front of an upstream that takes 2 requests a second, as
// nginx's limit_req with rate=2r/s burst=10: a burst of 20 requests is
// spread out rather than passed or refused whole. Each request calls Wait,
// which returns when its turn comes; the 9 that would wait more than 5s are
// denied at once.
func ExampleLimiter_TakeTurn() {
	upstream := core.MustPolicy(core.PolicyConfig{
		Name: "upstream", Algorithm: core.LeakyQueue,
		Quota: 2, Period: time.Second, // one request every 500ms
		Burst:    1,               // the first passes at once
		MaxDelay: 5 * time.Second, // the others wait up to 5s
	})
	// Tests only: a manual clock, moved by hand once every request has had
	// its decision. Omit it, and Wait sleeps on the real clock.
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	var decided sync.WaitGroup
	decided.Add(20)
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	limiter, _ := core.NewLimiter(store, core.WithClock(clock),
		core.WithObserver(func(_ context.Context, e core.Event) {
			if e.Kind != core.Queued && e.Kind != core.Waited {
				decided.Done() // a decision: the observer sees the waits too
			}
		}))

	var (
		mu     sync.Mutex
		served []time.Duration // each served request's wait
		denied int
		done   sync.WaitGroup
	)
	for range 20 {
		done.Go(func() { // one request of a server's
			rs := []core.Request{{Key: "api.example.com", Policy: upstream, Cost: 1}}
			d, err := limiter.TakeTurn(context.Background(), rs, make([]core.Decision, 1))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil: // the client went away while waiting: not served
			case d.Allowed: // its turn has come: serve it
				served = append(served, d.Delay)
			default: // 429, Retry-After: d.RetryAfter
				denied++
			}
		})
	}
	decided.Wait()
	clock.Advance(5 * time.Second)
	done.Wait()
	slices.Sort(served)
	fmt.Println("served after", served)
	fmt.Println("denied:", denied)
	// Output:
	// served after [0s 500ms 1s 1.5s 2s 2.5s 3s 3.5s 4s 4.5s 5s]
	// denied: 9
}

// An observer that counts outcomes needs no latency: WithoutLatency spares
// each decision the two clock reads that timing the store takes, so a
// decision on the memory store reads the clock once, in the store.
func ExampleWithoutLatency() {
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	defer store.Close()
	var counts [core.LeaseFailed + 1]int
	limiter, err := core.NewLimiter(store,
		core.WithObserver(func(_ context.Context, e core.Event) { counts[e.Kind]++ }),
		core.WithoutLatency())
	if err != nil {
		panic(err)
	}
	perIP := core.PerMinute(3)
	for range 5 {
		_, _ = limiter.Take(context.Background(), core.Request{Key: "203.0.113.7", Policy: perIP, Cost: 1})
	}
	fmt.Println("allowed:", counts[core.Allowed]+counts[core.NearLimit], "denied:", counts[core.Denied])
	// Output:
	// allowed: 3 denied: 2
}
