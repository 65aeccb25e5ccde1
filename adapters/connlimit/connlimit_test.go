package connlimit_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/connlimit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/sluicetest"
)

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// TestRateHoldsAFastSender: a sender twice as fast as its 100 messages a
// second gets 100 a second, within 1% over 10s (its burst of 5 included).
func TestRateHoldsAFastSender(t *testing.T) {
	clock := sluicetest.NewManualClock(epoch)
	p := core.MustPolicy(core.PolicyConfig{Name: "per-conn", Algorithm: core.GCRA, Quota: 100, Period: time.Second, Burst: 5})
	r, err := connlimit.NewRate(p, clock)
	require.NoError(t, err)
	allowed := 0
	for range 2000 { // 200 a second for 10s
		if r.Allow() {
			allowed++
		}
		clock.Advance(5 * time.Millisecond)
	}
	assert.InDelta(t, 1000, allowed, 10)
	assert.Equal(t, 1004, allowed, "the burst of 5 at once, then one each 10ms until 9.995s")

	_, err = connlimit.NewRate(core.MustPolicy(core.PolicyConfig{Name: "w", Algorithm: core.FixedWindow, Quota: 1, Period: time.Second}), clock)
	assert.Error(t, err)
}

// TestRateWait: Wait holds a message until its turn, and gives up with ctx.
func TestRateWait(t *testing.T) {
	clock := sluicetest.NewManualClock(epoch)
	p := core.MustPolicy(core.PolicyConfig{Name: "per-conn", Algorithm: core.TokenBucket, Quota: 10, Period: time.Second, Burst: 1})
	r, err := connlimit.NewRate(p, clock)
	require.NoError(t, err)
	require.NoError(t, r.Wait(context.Background()))
	done := make(chan error, 1)
	go func() { done <- r.Wait(context.Background()) }()
	time.Sleep(20 * time.Millisecond) // let it reach its sleep, if it would not wait
	select {
	case <-done:
		t.Fatal("the second message passed before its turn")
	default:
	}
	clock.Advance(100 * time.Millisecond)
	require.NoError(t, <-done)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, r.Wait(ctx), context.Canceled)
}

// vanishing is a listener whose connections can vanish: their writes then
// hang until the write deadline, as they do to a peer that is gone without
// closing once its window is full.
type vanishing struct {
	net.Listener
	mu    sync.Mutex
	conns []*vconn
}

type vconn struct {
	net.Conn
	gone     atomic.Bool
	deadline atomic.Int64 // ns since the epoch
}

func (l *vanishing) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	v := &vconn{Conn: c}
	l.mu.Lock()
	l.conns = append(l.conns, v)
	l.mu.Unlock()
	return v, nil
}

func (c *vconn) SetWriteDeadline(t time.Time) error {
	c.deadline.Store(t.UnixNano())
	return c.Conn.SetWriteDeadline(t)
}

func (c *vconn) Write(b []byte) (int, error) {
	if c.gone.Load() {
		if d := c.deadline.Load(); d > 0 {
			time.Sleep(time.Until(time.Unix(0, d)))
		}
		return 0, os.ErrDeadlineExceeded
	}
	return c.Conn.Write(b)
}

// TestSSESlotsFollowLiveClients: 2,000 server-sent-events clients each
// hold a slot of the concurrency limit; 30% vanish without closing. One
// keepalive interval later (on the manual clock), the slots in flight are
// the live clients'; once every client is gone and the server closed, no
// slot and no goroutine is left.
func TestSSESlotsFollowLiveClients(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const (
		clients  = 2000
		vanished = 600
		every    = 15 * time.Second
	)
	clock := sluicetest.NewManualClock(epoch)
	slots, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(clients + 10), Clock: clock})
	require.NoError(t, err)
	mw, err := sluicehttp.New(admit.Config{Concurrency: slots})
	require.NoError(t, err)
	var ticks atomic.Int64 // keepalive rounds the handlers went through
	sse := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		live, err := connlimit.NewLiveness(clock, every, cancel)
		if err != nil {
			return
		}
		defer live.Stop()
		rc := http.NewResponseController(w)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: hello\ndata: {}\n\n"))
		_ = rc.Flush()
		tick := make(chan struct{}, 1)
		var arm func()
		arm = func() {
			clock.AfterFunc(every-time.Millisecond, func() { // just before the check
				select {
				case tick <- struct{}{}:
				default:
				}
			})
		}
		arm()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick:
				_ = rc.SetWriteDeadline(time.Now().Add(time.Second))
				_, err := w.Write([]byte(": keepalive\n\n"))
				if err == nil {
					err = rc.Flush()
				}
				if err == nil {
					live.Alive()
					arm()
				}
				ticks.Add(1) // after Alive: the test moves on once all have ticked
				if err != nil {
					return // the client is gone
				}
			}
		}
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	vl := &vanishing{Listener: ln}
	srv := httptest.NewUnstartedServer(sse)
	srv.Listener = vl
	srv.Start()

	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: -1}
	client := &http.Client{Transport: tr}
	bodies := make([]*http.Response, clients)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range clients {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			resp, err := client.Get(srv.URL)
			if !assert.NoError(t, err) {
				return
			}
			line, _ := bufio.NewReader(resp.Body).ReadString('\n')
			assert.Equal(t, "event: hello\n", line)
			bodies[i] = resp
		}()
	}
	wg.Wait()
	require.Equal(t, clients, slots.InFlight())
	waitFor(t, func() bool { return clock.Timers() == 2*clients }) // every handler's keepalive and check set

	vl.mu.Lock()
	for _, c := range vl.conns[:vanished] {
		c.gone.Store(true) // the client's socket stays open: it never closes
	}
	vl.mu.Unlock()
	// The keepalives go out just before the interval ends, the checks at
	// its end: advance to the first, let every handler write its own,
	// then to the second.
	clock.Advance(every - time.Millisecond)
	waitFor(t, func() bool { return ticks.Load() == clients })
	require.Equal(t, int64(clients), ticks.Load())
	clock.Advance(time.Millisecond)
	waitFor(t, func() bool { return slots.InFlight() == clients-vanished })
	assert.Equal(t, clients-vanished, slots.InFlight(), "one interval on, only the live clients hold slots")

	for _, b := range bodies {
		if b != nil {
			_ = b.Body.Close()
		}
	}
	srv.CloseClientConnections()
	srv.Close()
	tr.CloseIdleConnections()
	waitFor(t, func() bool { return slots.InFlight() == 0 })
	assert.Zero(t, slots.InFlight(), "no slot leaks")
}

// waitFor polls cond, up to 20s of wall time: a bound on a shared machine's
// scheduling, not a figure under test.
func waitFor(t *testing.T, cond func() bool) {
	for deadline := time.Now().Add(20 * time.Second); !cond() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLivenessMissed: a connection not seen within an interval is ended,
// once; one seen goes on; Stop ends the watch.
func TestLivenessMissed(t *testing.T) {
	clock := sluicetest.NewManualClock(epoch)
	var missed atomic.Int64
	l, err := connlimit.NewLiveness(clock, time.Second, func() { missed.Add(1) })
	require.NoError(t, err)
	l.Alive()
	clock.Advance(time.Second)
	assert.Zero(t, missed.Load())
	clock.Advance(time.Second)
	assert.Equal(t, int64(1), missed.Load())
	clock.Advance(time.Second)
	assert.Equal(t, int64(1), missed.Load(), "once")
	l.Stop()

	l, err = connlimit.NewLiveness(clock, time.Second, func() { missed.Add(1) })
	require.NoError(t, err)
	l.Stop()
	clock.Advance(2 * time.Second)
	assert.Equal(t, int64(1), missed.Load(), "stopped")
	assert.Zero(t, clock.Timers())
	_, err = connlimit.NewLiveness(clock, 0, func() {})
	assert.Error(t, err)
}
