// Command stream serves a streaming completion endpoint under a token
// budget per API key, and a WebSocket echo under a message rate per
// connection:
//
//	go run ./examples/stream [-addr localhost:8080]
//	curl -N -H 'X-Api-Key: k1' 'localhost:8080/complete?n=300'
//
// Each completion reserves 64 tokens at admission, settles as its tokens
// stream (server-sent events) and ends with a "ratelimit" event carrying
// the budget as settled; a completion whose budget runs out mid-stream is
// cut there. Every response carries RateLimit-Policy: "tokens";q=1000;
// w=60;qu="tokens" and RateLimit, which a client paces itself on.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/connlimit"
	"github.com/sluice-go/sluice/adapters/meter"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

func main() {
	addr := flag.String("addr", "localhost:8080", "address to listen on")
	flag.Parse()
	h, err := newHandler(core.SystemClock{})
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe(*addr, h))
}

// Tokens is the budget: 1,000 tokens a minute per API key, 1,000 at once.
var Tokens = core.MustPolicy(core.PolicyConfig{Name: "tokens", Algorithm: core.TokenBucket,
	Quota: 1000, Period: time.Minute, Burst: 1000, Unit: "tokens"})

// PerConn is a WebSocket connection's message rate: 20 a second, 5 at once.
var PerConn = core.MustPolicy(core.PolicyConfig{Name: "per-conn", Algorithm: core.GCRA,
	Quota: 20, Period: time.Second, Burst: 5})

func newHandler(clock core.Clock) (http.Handler, error) {
	// A redisstore.Store in place of the memory store shares the budget
	// across a fleet: reservations live in Redis, and those of an instance
	// that crashes come back after the limiter's reservation TTL.
	store, err := memory.New(memory.WithClock(clock))
	if err != nil {
		return nil, err
	}
	limiter, err := core.NewLimiter(store, core.WithReservationTTL(30*time.Second))
	if err != nil {
		return nil, err
	}
	budget, err := sluicehttp.New(admit.Config{
		Limiter:   limiter,
		Estimates: true, // reserve the cost, settle it as the response streams
		Rules: []admit.Rule{{Policy: Tokens, Key: admit.Header("X-Api-Key"),
			Cost: func(*admit.Request) int64 { return 64 }}},
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /complete", budget(http.HandlerFunc(complete)))
	mux.HandleFunc("GET /echo", func(w http.ResponseWriter, r *http.Request) { echo(w, r, clock) })
	return mux, nil
}

// complete streams n tokens as server-sent events, settling every 16.
func complete(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.URL.Query().Get("n"))
	n = min(max(n, 0), 100_000)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	m := meter.New(r.Context(), meter.Config{Step: 16})
	for i := 0; i < n && r.Context().Err() == nil; i++ {
		fmt.Fprintf(w, "data: token-%d\n\n", i)
		if !m.Add(r.Context(), 1) {
			break // the budget ran out: end the stream, well formed
		}
		if i%16 == 15 {
			_ = rc.Flush()
		}
	}
	_, _ = m.Close(r.Context())
	fmt.Fprintf(w, "event: ratelimit\ndata: %s\n\n", m.Field())
}

// echo echoes a WebSocket's messages, reading them no faster than PerConn
// allows: a faster client waits, under the protocol's flow control.
func echo(w http.ResponseWriter, r *http.Request, clock core.Clock) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	rate, err := connlimit.NewRate(PerConn, clock)
	if err != nil {
		return
	}
	ctx := r.Context()
	for {
		typ, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		if err := rate.Wait(ctx); err != nil {
			return
		}
		if err := write(ctx, c, typ, msg); err != nil {
			return
		}
	}
}

func write(ctx context.Context, c *websocket.Conn, typ websocket.MessageType, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return c.Write(ctx, typ, msg)
}
