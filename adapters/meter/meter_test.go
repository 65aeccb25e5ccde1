package meter_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/meter"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
)

// tokenServer serves a streaming completion of n tokens (the query's n) as
// server-sent events, under a budget of 100 tokens per key, each request
// reserving 20; the Meter settles every 5 tokens.
func tokenServer(t *testing.T, finish bool) (*httptest.Server, *core.Policy) {
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	require.NoError(t, err)
	l, err := core.NewLimiter(store)
	require.NoError(t, err)
	tokens := core.MustPolicy(core.PolicyConfig{Name: "tokens", Algorithm: core.TokenBucket, Quota: 100, Period: time.Hour, Burst: 100, Unit: "tokens"})
	mw, err := sluicehttp.New(admit.Config{
		Limiter:   l,
		Estimates: true,
		Rules: []admit.Rule{{Policy: tokens, Key: admit.Header("X-Api-Key"),
			Cost: func(*admit.Request) int64 { return 20 }}},
	})
	require.NoError(t, err)
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		_, _ = fmt.Sscan(r.URL.Query().Get("n"), &n)
		w.Header().Set("Content-Type", "text/event-stream")
		m := meter.New(r.Context(), meter.Config{Step: 5, Finish: finish})
		for i := range n {
			fmt.Fprintf(w, "data: token %d\n\n", i)
			if !m.Add(r.Context(), 1) {
				break
			}
		}
		_, _ = m.Close(r.Context())
		fmt.Fprintf(w, "event: ratelimit\ndata: %s\n\n", m.Field())
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, tokens
}

// stream returns the data events of a response and its ratelimit event.
func stream(t *testing.T, url string) (resp *http.Response, tokens int, last string) {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-Api-Key", "k1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: ") && event == "ratelimit":
			last = line[6:]
		case strings.HasPrefix(line, "data: "):
			tokens++
		case line == "":
			event = ""
		}
	}
	return resp, tokens, last
}

// TestMeterStopsTheStream: a stream settles as it goes; when the budget
// runs out mid-stream it ends, well formed, with the standing as settled,
// and the next request's fields show it too.
func TestMeterStopsTheStream(t *testing.T) {
	srv, _ := tokenServer(t, false)
	resp, n, last := stream(t, srv.URL+"?n=30")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, `"tokens";q=100;w=3600;qu="tokens"`, resp.Header.Get("RateLimit-Policy"))
	assert.Equal(t, `"tokens";r=80;t=720`, resp.Header.Get("RateLimit"), "the reservation, at admission")
	assert.Equal(t, 30, n)
	assert.Equal(t, `"tokens";r=50;t=1800`, last, "settled 30, one estimate of 20 ahead until the end")
	resp, _, _ = stream(t, srv.URL+"?n=0")
	assert.Equal(t, `"tokens";r=50;t=1800`, resp.Header.Get("RateLimit"), "the next request sees 30 spent, and its own 20")

	// 70 left: a stream of 100 is cut where the budget runs out.
	resp, n, last = stream(t, srv.URL+"?n=100")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, 55, n, "stopped when the budget could not stay one estimate (20) ahead")
	assert.Contains(t, last, `"tokens";r=0;`)
	resp, _, _ = stream(t, srv.URL+"?n=1")
	assert.Equal(t, 429, resp.StatusCode, "15 left, short of an estimate")
	assert.Equal(t, `"tokens";r=15;t=180`, resp.Header.Get("RateLimit"))
}

// TestMeterFinishRecordsDebt: with Finish the stream runs to its end and
// the usage past the budget is charged.
func TestMeterFinishRecordsDebt(t *testing.T) {
	srv, _ := tokenServer(t, true)
	_, n, last := stream(t, srv.URL+"?n=130")
	assert.Equal(t, 130, n)
	assert.Contains(t, last, `r=0`)
	resp, _, _ := stream(t, srv.URL+"?n=1")
	assert.Equal(t, 429, resp.StatusCode)
	// 30 tokens of debt: the bucket refills one per 36s; 20 are needed
	// after the 30 are repaid.
	assert.Equal(t, "1800", resp.Header.Get("Retry-After"))
}

// TestMeterWithoutReservation only counts.
func TestMeterWithoutReservation(t *testing.T) {
	m := meter.New(context.Background(), meter.Config{})
	assert.True(t, m.Add(context.Background(), 5))
	assert.Equal(t, int64(5), m.Used())
	assert.Equal(t, "", m.Field())
	_, err := m.Close(context.Background())
	assert.NoError(t, err)
}
