package admit_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/store/memory"
)

// newLimiter returns a limiter on a memory store, and the store to close.
func newLimiter() (*core.Limiter, io.Closer) {
	store, err := memory.New()
	if err != nil {
		log.Fatal(err)
	}
	limiter, err := core.NewLimiter(store)
	if err != nil {
		log.Fatal(err)
	}
	return limiter, store
}

var hello = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello\n") })

// Each API key's plan chooses its limit: the policy comes from a fixed set,
// and the header fields name it.
func ExampleRule_policies() {
	free := core.MustPolicy(core.PolicyConfig{Name: "free", Algorithm: core.GCRA, Quota: 60, Period: time.Minute, Burst: 10})
	pro := core.MustPolicy(core.PolicyConfig{Name: "pro", Algorithm: core.GCRA, Quota: 600, Period: time.Minute, Burst: 100})
	plans := map[string]*core.Policy{"key-1": free, "key-2": pro} // the accounts database

	limiter, store := newLimiter()
	defer store.Close()
	limit, err := sluicehttp.New(admit.Config{
		Limiter: limiter,
		Rules: []admit.Rule{{
			Policies: []*core.Policy{free, pro},
			Select: func(r *admit.Request) (*core.Policy, error) {
				plan, ok := plans[r.Header("X-API-Key")]
				if !ok {
					return free, nil
				}
				return plan, nil
			},
			Key: admit.Header("X-API-Key"),
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	h := limit(hello)
	for _, key := range []string{"key-1", "key-2"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-API-Key", key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(key, rec.Header().Get("RateLimit-Policy"), rec.Header().Get("RateLimit"))
	}
	// Output:
	// key-1 "free";q=10;w=10 "free";r=9;t=1
	// key-2 "pro";q=100;w=10 "pro";r=99;t=1
}

// A limit on failed logins: 3 per client per quarter of an hour, however
// many logins succeed. Once three have failed, every login is refused until
// one failure has aged out.
func ExampleRule_charge() {
	failures := core.MustPolicy(core.PolicyConfig{Name: "login-failures", Algorithm: core.GCRA, Quota: 3, Period: 15 * time.Minute, Burst: 3})
	limiter, store := newLimiter()
	defer store.Close()
	limit, err := sluicehttp.New(admit.Config{
		Limiter: limiter,
		Rules:   []admit.Rule{{Policy: failures, Key: admit.ClientIP(), Charge: func(status int) bool { return status >= 400 }}},
	})
	if err != nil {
		log.Fatal(err)
	}
	login := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("password") != "secret" {
			http.Error(w, "wrong password", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, "welcome\n")
	}))
	for _, password := range []string{"secret", "guess", "secret", "guess", "guess", "secret"} {
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader("password="+password))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		login.ServeHTTP(rec, req)
		fmt.Print(rec.Code, " ")
	}
	fmt.Println()
	// Output: 200 401 200 401 401 429
}

// The office network and a monitoring host skip the per-IP limit, without a
// store round trip.
func ExampleClientIPKey_Except() {
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	limiter, store := newLimiter()
	defer store.Close()
	limit, err := sluicehttp.New(admit.Config{
		Limiter: limiter,
		Rules:   []admit.Rule{{Policy: perIP, Key: admit.ClientIP().Except("10.0.0.0/8", "192.0.2.7")}},
	})
	if err != nil {
		log.Fatal(err)
	}
	h := limit(hello)
	for _, peer := range []string{"10.1.2.3", "192.0.2.7", "198.51.100.1"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = peer + ":4000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%s %d %q\n", peer, rec.Code, rec.Header().Get("RateLimit"))
	}
	// Output:
	// 10.1.2.3 200 ""
	// 192.0.2.7 200 ""
	// 198.51.100.1 200 "\"per-ip\";r=9;t=1"
}

// An internal service's API key skips the per-key limit.
func ExampleKeyFunc_Except() {
	perKey := core.MustPolicy(core.PolicyConfig{Name: "per-key", Algorithm: core.GCRA, Quota: 100, Period: time.Minute, Burst: 20})
	limiter, store := newLimiter()
	defer store.Close()
	limit, err := sluicehttp.New(admit.Config{
		Limiter: limiter,
		Rules:   []admit.Rule{{Policy: perKey, Key: admit.Header("X-API-Key").Except("internal-batch-7f3a")}},
	})
	if err != nil {
		log.Fatal(err)
	}
	h := limit(hello)
	for _, key := range []string{"internal-batch-7f3a", "customer-42"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-API-Key", key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%s %q\n", key, rec.Header().Get("RateLimit"))
	}
	// Output:
	// internal-batch-7f3a ""
	// customer-42 "\"per-key\";r=19;t=1"
}

// A concurrency limit beside a rate limit: two requests at a time, the
// second slot kept for critical ones. With one request in flight already,
// a default request is shed, 503 with Retry-After, and a critical one
// served. The limit reports to the same kind of observer as the rate
// limiter does.
func ExampleConfig_concurrency() {
	observe := func(_ context.Context, e core.Event) {
		if e.Kind == core.Shed {
			fmt.Println("observed:", e.Kind, e.LimitName, e.Class, e.Err)
		}
	}
	slots, err := backpressure.New(backpressure.Config{
		Controller: backpressure.Static(2),
		Headroom:   backpressure.Headroom{Critical: 0.5},
		Name:       "api", Observer: observe,
	})
	if err != nil {
		log.Fatal(err)
	}
	limiter, store := newLimiter()
	defer store.Close()
	limit, err := sluicehttp.New(admit.Config{
		Limiter:     limiter,
		Rules:       []admit.Rule{{Policy: core.PerSecond(10), Key: admit.ClientIP()}},
		Concurrency: slots,
		Class: func(r *admit.Request) core.Class {
			if r.Header("X-Priority") == "critical" {
				return core.Critical
			}
			return core.Default
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	h := limit(hello)

	inFlight, err := slots.Acquire(context.Background(), "", core.Default) // a request already at work
	if err != nil {
		log.Fatal(err)
	}
	defer inFlight.Release()
	for _, priority := range []string{"default", "critical"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-Priority", priority)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%s: %d Retry-After %q\n", priority, rec.Code, rec.Header().Get("Retry-After"))
	}
	// Output:
	// observed: shed api default backpressure: default request shed: saturated
	// default: 503 Retry-After "1"
	// critical: 200 Retry-After ""
}
