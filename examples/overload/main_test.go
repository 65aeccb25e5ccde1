package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// A short run, lighter than the command's: sheds happen once the service
// is overloaded, sheddable requests go first and critical ones never, the
// abusive client is refused by its rate limit, the one observer saw every
// refusal, and nothing is left in flight or waiting. Nothing is timed: a
// busy machine changes the figures, not what they show. The queue, its
// waits and the clients' patience are long, so that a machine stalled for
// seconds (a race-detector build on a shared CI box) times no critical
// request out: whatever the machine, the queue fills faster at four times
// the capacity than it drains.
func TestOverload(t *testing.T) {
	defer goleak.VerifyNone(t)
	cfg := defaultConfig()
	cfg.Workers, cfg.Service, cfg.Phase = 4, 100*time.Millisecond, 2*time.Second // 40 requests/s
	cfg.Clients, cfg.Abuser = 100, 15
	cfg.Queue, cfg.MaxWait, cfg.Timeout = 40, 10*time.Second, time.Minute
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var out bytes.Buffer
	totals, err := run(context.Background(), ln, cfg, &out)
	t.Log("\n" + out.String())
	require.NoError(t, err)

	const critical, def, sheddable = 0, 1, 2
	assert.Zero(t, totals.Shed[critical], "critical requests shed")
	assert.Positive(t, totals.Shed[sheddable], "sheddable requests shed")
	assert.Greater(t, share(totals.Shed[sheddable], totals.Arrived[sheddable]), share(totals.Shed[def], totals.Arrived[def]),
		"the share of sheddable requests shed, and of default ones")
	assert.Positive(t, totals.OK)
	assert.Positive(t, totals.Limited, "the abusive client's 429s")
	assert.Zero(t, totals.Other, "answers other than 200, 429 and 503")
	assert.Equal(t, totals.Limited, totals.Denied, "rate denials seen by the observer")
	assert.Equal(t, totals.Shed[critical]+totals.Shed[def]+totals.Shed[sheddable], totals.Sheds, "sheds seen by the observer")
	assert.Zero(t, totals.InFlight, "in flight at the end")
	assert.Zero(t, totals.Waiting, "waiting at the end")
}

func share(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// -serve: the server alone answers a request of any class.
func TestServe(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln, defaultConfig(), io.Discard) }()
	client := &http.Client{Transport: &http.Transport{}}
	for _, priority := range []string{"critical", "", "sheddable"} {
		req, err := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/", nil)
		require.NoError(t, err)
		req.Header.Set("X-Priority", priority)
		resp, err := client.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, priority)
		assert.Equal(t, "ok\n", string(body))
		assert.NotEmpty(t, resp.Header.Get("RateLimit"))
	}
	client.CloseIdleConnections()
	cancel()
	require.NoError(t, <-served)
}
