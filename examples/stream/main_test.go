package main

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/connlimit"
	"github.com/sluice-go/sluice/sluicetest"
)

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// TestCompletionBudget: completions stream until the key's 1,000 tokens
// are spent; the last event and the next response show the budget.
func TestCompletionBudget(t *testing.T) {
	h, err := newHandler(sluicetest.NewManualClock(epoch))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(n string) (*http.Response, int, string) {
		req, _ := http.NewRequest("GET", srv.URL+"/complete?n="+n, nil)
		req.Header.Set("X-Api-Key", "k1")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		tokens, last := 0, ""
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "data: token-") {
				tokens++
			} else if strings.HasPrefix(l, "data: ") {
				last = l[6:]
			}
		}
		return resp, tokens, last
	}
	resp, n, last := get("600")
	assert.Equal(t, `"tokens";q=1000;w=60;qu="tokens"`, resp.Header.Get("RateLimit-Policy"))
	assert.Equal(t, 600, n)
	assert.Contains(t, last, `"tokens";r=336;`, "600 used, 64 still held ahead until the end")
	_, n, _ = get("600")
	assert.Less(t, n, 400, "cut where the budget ran out")
	resp, _, _ = get("1")
	assert.Equal(t, 429, resp.StatusCode)
}

// The per-connection rate, held to a WebSocket client sending twice as
// fast as it allows, over 10s of the manual clock: each message is sent,
// then the clock moves 25ms; the server answers each message it lets
// through. The count is the rate's within 1%, with either library.
func TestWebSocketRate(t *testing.T) {
	for _, lib := range []string{"coder", "gorilla"} {
		t.Run(lib, func(t *testing.T) {
			clock := sluicetest.NewManualClock(epoch)
			allowed := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rate, _ := connlimit.NewRate(PerConn, clock)
				next := serveWS(t, lib, w, r)
				for {
					ok, more := next(rate.Allow)
					if !more {
						return
					}
					if ok {
						allowed++
					}
				}
			}))
			defer srv.Close()
			url := "ws" + strings.TrimPrefix(srv.URL, "http")
			send := dialWS(t, lib, url)
			for range 400 { // 40 a second for 10s
				send()
				clock.Advance(25 * time.Millisecond)
			}
			// The burst's 5 at once stand in for the first message's slot
			// and 4 more: the rate itself is 20 a second, within 1%.
			assert.InEpsilon(t, 200, allowed-int(PerConn.Burst()-1), 0.01)
			assert.Equal(t, 204, allowed)
		})
	}
}

// serveWS upgrades with lib and returns a function reading one message,
// deciding it with allow and answering "ok" or "slow".
func serveWS(t *testing.T, lib string, w http.ResponseWriter, r *http.Request) func(allow func() bool) (ok, more bool) {
	ctx := context.Background()
	if lib == "coder" {
		c, err := websocket.Accept(w, r, nil)
		require.NoError(t, err)
		return func(allow func() bool) (bool, bool) {
			if _, _, err := c.Read(ctx); err != nil {
				return false, false
			}
			ok := allow()
			return ok, c.Write(ctx, websocket.MessageText, []byte(map[bool]string{true: "ok", false: "slow"}[ok])) == nil
		}
	}
	c, err := (&gorilla.Upgrader{}).Upgrade(w, r, nil)
	require.NoError(t, err)
	return func(allow func() bool) (bool, bool) {
		if _, _, err := c.ReadMessage(); err != nil {
			return false, false
		}
		ok := allow()
		return ok, c.WriteMessage(gorilla.TextMessage, []byte(map[bool]string{true: "ok", false: "slow"}[ok])) == nil
	}
}

// dialWS dials url with lib and returns a function sending one message and
// waiting for its answer.
func dialWS(t *testing.T, lib, url string) func() {
	ctx := context.Background()
	if lib == "coder" {
		c, _, err := websocket.Dial(ctx, url, nil)
		require.NoError(t, err)
		t.Cleanup(func() { c.CloseNow() })
		return func() {
			require.NoError(t, c.Write(ctx, websocket.MessageText, []byte("hi")))
			_, _, err := c.Read(ctx)
			require.NoError(t, err)
		}
	}
	c, _, err := gorilla.DefaultDialer.Dial(url, nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return func() {
		require.NoError(t, c.WriteMessage(gorilla.TextMessage, []byte("hi")))
		_, _, err := c.ReadMessage()
		require.NoError(t, err)
	}
}
