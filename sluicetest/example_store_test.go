package sluicetest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
)

// A handler's test with sluice in front: a manual clock, a store it can
// break and reset, and the fields read as a client reads them.
func Example() {
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store := sluicetest.NewStore(clock)
	defer store.Close()
	limiter, _ := core.NewLimiter(store, core.WithFailClosed(0))
	mw, _ := sluicehttp.New(admit.Config{
		Limiter: limiter,
		Rules:   []admit.Rule{{Policy: core.PerMinute(2), Key: admit.ClientIP()}},
		Clock:   clock,
	})
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello\n") }))
	get := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil)) // from 192.0.2.1
		return rec
	}
	show := func(rec *httptest.ResponseRecorder) {
		f, _ := sluicetest.ParseFields(rec.Result().Header)
		fmt.Println(rec.Code, f.Limits, "retry after", f.RetryAfter)
	}

	show(get())
	show(get())
	show(get())
	clock.Advance(30 * time.Second)
	show(get())
	_ = store.ResetKey(context.Background(), "192.0.2.1")
	show(get())
	store.Fail(nil)
	show(get())
	// Output:
	// 200 [{2-per-minute 1 30}] retry after -1
	// 200 [{2-per-minute 0 60}] retry after -1
	// 429 [{2-per-minute 0 30}] retry after 30
	// 200 [{2-per-minute 0 60}] retry after -1
	// 200 [{2-per-minute 1 30}] retry after -1
	// 503 [] retry after 1
}
