package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/sluicetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The server on a free port, on a clock that does not move: four logins
// and twelve quick requests to GET /, then the scrape holds the counts of
// each policy's results, exactly.
func TestScrape(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, ln, sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
	}()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	send := func(method, path string) int {
		req, err := http.NewRequest(method, base+path, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}

	var statuses []int
	for range 4 {
		statuses = append(statuses, send(http.MethodPost, "/login"))
	}
	for range 12 {
		statuses = append(statuses, send(http.MethodGet, "/"))
	}
	assert.Equal(t, []int{200, 200, 200, 429, 200, 200, 200, 200, 200, 200, 200, 429, 429, 429, 429, 429}, statuses)

	resp, err := client.Get(base + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	scrape := string(body)

	// A login is reported under the policy closest to its limit: login's
	// 3 a minute, until it is spent. The denied login took nothing from
	// per-ip's 10, of which three logins left 7.
	for _, line := range []string{
		`sluice_rate_limiting_requests_total{sluice_rate_limiting_degraded="false",sluice_rate_limiting_near_limit="false",sluice_rate_limiting_policy="login",sluice_rate_limiting_result="acquired"} 2`,
		`sluice_rate_limiting_requests_total{sluice_rate_limiting_degraded="false",sluice_rate_limiting_near_limit="true",sluice_rate_limiting_policy="login",sluice_rate_limiting_result="acquired"} 1`,
		`sluice_rate_limiting_requests_total{sluice_rate_limiting_degraded="false",sluice_rate_limiting_near_limit="false",sluice_rate_limiting_policy="login",sluice_rate_limiting_result="rejected"} 1`,
		`sluice_rate_limiting_requests_total{sluice_rate_limiting_degraded="false",sluice_rate_limiting_near_limit="false",sluice_rate_limiting_policy="per-ip",sluice_rate_limiting_result="acquired"} 5`,
		`sluice_rate_limiting_requests_total{sluice_rate_limiting_degraded="false",sluice_rate_limiting_near_limit="true",sluice_rate_limiting_policy="per-ip",sluice_rate_limiting_result="acquired"} 2`,
		`sluice_rate_limiting_requests_total{sluice_rate_limiting_degraded="false",sluice_rate_limiting_near_limit="false",sluice_rate_limiting_policy="per-ip",sluice_rate_limiting_result="rejected"} 5`,
		`sluice_rate_limiting_store_duration_seconds_count{sluice_rate_limiting_policy="login"} 4`,
		`sluice_rate_limiting_store_duration_seconds_count{sluice_rate_limiting_policy="per-ip"} 12`,
		`sluice_rate_limiting_store_duration_seconds_bucket{sluice_rate_limiting_policy="per-ip",le="+Inf"} 12`,
		`sluice_rate_limiting_concurrency_limit{sluice_rate_limiting_policy="site"} 64`,
		`sluice_rate_limiting_active_requests{sluice_rate_limiting_policy="site"} 0`,
		`sluice_rate_limiting_queued_requests{sluice_rate_limiting_policy="site"} 0`,
		`# TYPE sluice_rate_limiting_requests_total counter`,
		`# TYPE sluice_rate_limiting_store_duration_seconds histogram`,
	} {
		assert.Contains(t, scrape, line+"\n")
	}
	for _, l := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(l, "sluice_rate_limiting_store_failures") {
			assert.True(t, strings.HasSuffix(l, " 0"), "the memory store never fails: %s", l)
		}
	}
	assert.Contains(t, scrape, `sluice_rate_limiting_store_failures_total{error_type="timeout",sluice_rate_limiting_policy="login",sluice_rate_limiting_store_operation="take"} 0`+"\n",
		"the middleware announces its policies: their series start at zero")
	assert.Contains(t, scrape, `sluice_rate_limiting_shed_requests_total{sluice_rate_limiting_class="default",sluice_rate_limiting_policy="site",sluice_rate_limiting_reason="saturated"} 0`+"\n",
		"Watch starts the requests shed at zero")
	for _, l := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(l, "sluice_rate_limiting_shed_requests_total") {
			assert.True(t, strings.HasSuffix(l, " 0"), "sixteen requests one after another never fill 64 slots: %s", l)
		}
	}
	if t.Failed() {
		for _, l := range strings.Split(scrape, "\n") {
			if strings.HasPrefix(l, "sluice") {
				t.Log(l)
			}
		}
	}
}
