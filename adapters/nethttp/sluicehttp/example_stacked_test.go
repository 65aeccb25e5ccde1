package sluicehttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
)

// Two middlewares on one path, as an application stacks them: a per-IP limit
// before authentication, a per-plan limit by API key after it. Each adds its
// members to the fields; the second request exhausts the plan, and the third
// is denied by it alone.
func ExampleNew_stacked() {
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	limiter, _ := core.NewLimiter(store)
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 10, Period: 5 * time.Second, Burst: 10})
	free := core.MustPolicy(core.PolicyConfig{Name: "free", Algorithm: core.GCRA, Quota: 2, Period: time.Minute, Burst: 2})
	byIP, _ := sluicehttp.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{{Policy: perIP, Key: admit.ClientIP()}}})
	byPlan, _ := sluicehttp.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{{Policy: free, Key: admit.Header("X-Api-Key")}}})
	items := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "items\n") })
	h := byIP(byPlan(items)) // byPlan would sit behind the authentication middleware

	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/api/items", nil)
		req.Header.Set("X-Api-Key", "k1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("RateLimit"))
		if rec.Code == http.StatusOK {
			fmt.Println("   ", rec.Header().Get("RateLimit-Policy"))
		} else {
			fmt.Println("    Retry-After:", rec.Header().Get("Retry-After"))
		}
	}
	// Output:
	// 200 "per-ip";r=9;t=1, "free";r=1;t=30
	//     "per-ip";q=10;w=5, "free";q=2;w=60
	// 200 "per-ip";r=8;t=1, "free";r=0;t=60
	//     "per-ip";q=10;w=5, "free";q=2;w=60
	// 429 "per-ip";r=7;t=2, "free";r=0;t=30
	//     Retry-After: 30
}
