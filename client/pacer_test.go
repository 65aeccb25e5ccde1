package client

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func resp(code int, kv ...string) *http.Response {
	return &http.Response{StatusCode: code, Header: hdr(kv...)}
}

func delays(p *pacer, host string, now time.Time, n int) []time.Duration {
	var out []time.Duration
	for range n {
		out = append(out, p.reserve(host, now, noLimit).delay)
	}
	return out
}

func TestPacerSpreadsRemainingUnitsOverTheTimeLeft(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxDelay: time.Minute})
	now := epoch
	p.update("h", resp(200, "RateLimit-Policy", `"p";q=100;w=60`, "RateLimit", `"p";r=4;t=20`), 0, false, now)
	// 4 units over 20s: one now, then every 5s; the fifth waits for reset.
	s := time.Second
	assert.Equal(t, []time.Duration{0, 5 * s, 10 * s, 15 * s, 20 * s, 20 * s}, delays(p, "h", now, 6))
	// Once the window is over we know nothing better: no wait.
	assert.Zero(t, p.reserve("h", now.Add(20*s), noLimit).delay)
	assert.Zero(t, p.reserve("other", now, noLimit).delay)
}

func TestPacerDoesNothingWhileRemainingIsHigh(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxDelay: time.Minute})
	now := epoch
	p.update("h", resp(200, "RateLimit-Policy", `"p";q=100;w=60`, "RateLimit", `"p";r=13;t=30`), 0, false, now)
	// Low mark: 10% of 100 = 10. Three sends free, then 10 units over 30s.
	d := delays(p, "h", now, 5)
	assert.Equal(t, []time.Duration{0, 0, 0, 0, 3 * time.Second}, d)
}

func TestPacerLowUnitsWithoutLimit(t *testing.T) {
	p := newTestPacer(t, PacingConfig{LowUnits: 2, MaxDelay: time.Minute})
	p.update("h", resp(200, "X-RateLimit-Remaining", "3", "X-RateLimit-Reset", "12"), 0, false, epoch)
	assert.Equal(t, []time.Duration{0, 0, 6 * time.Second, 12 * time.Second}, delays(p, "h", epoch, 4))
}

func TestPacerPacesOnTheMostRestrictivePolicy(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxDelay: time.Hour})
	p.update("h", resp(200,
		"RateLimit-Policy", `"per-ip";q=100;w=60, "login";q=5;w=300`,
		"RateLimit", `"per-ip";r=42;t=17, "login";r=0;t=250`), 0, false, epoch)
	info := p.reserve("h", epoch, noLimit)
	assert.Equal(t, 250*time.Second, info.delay)
	assert.Equal(t, "login", info.policy)
	assert.Zero(t, info.remaining)
}

func TestPacerKeepsTheMostRestrictiveWhenTooMany(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxDelay: time.Hour})
	v := ""
	for i := range 8 {
		v += fmt.Sprintf(`"p%d";r=%d;t=10, `, i, 100+i)
	}
	v += `"tight";r=0;t=99`
	p.update("h", resp(200, "RateLimit", v), 0, false, epoch)
	assert.Equal(t, 99*time.Second, p.reserve("h", epoch, noLimit).delay)
	ph, _ := p.hosts.lookup("h", epoch)
	assert.Equal(t, maxPacedPolicies, ph.n)
	assert.Equal(t, "tight", ph.policies[0].name)
}

func TestPacerMaxDelaySendsAtOnce(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxDelay: 15 * time.Second})
	p.update("h", resp(200, "RateLimit", `"day";r=0;t=3600`), 0, false, epoch)
	assert.Zero(t, p.reserve("h", epoch, noLimit).delay, "an hour is not a pacing delay")
}

func TestPacerRetryAfterHoldsTheHost(t *testing.T) {
	p := newTestPacer(t, PacingConfig{})
	p.update("h", resp(429), 7*time.Second, true, epoch)
	assert.Equal(t, 7*time.Second, p.reserve("h", epoch, noLimit).delay)
	assert.Zero(t, p.reserve("h", epoch.Add(7*time.Second), noLimit).delay)

	// Not from a 200, and rate-limit fields take precedence.
	p.update("g", resp(200), 7*time.Second, true, epoch)
	assert.Zero(t, p.reserve("g", epoch, noLimit).delay)
	p.update("f", resp(429, "RateLimit", `"p";r=0;t=3`), 7*time.Second, true, epoch)
	assert.Equal(t, 3*time.Second, p.reserve("f", epoch, noLimit).delay)
}

func TestPacerKeepsPromisedSlotsAcrossUpdates(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxDelay: time.Minute})
	h := resp(200, "RateLimit", `"p";r=1;t=10`)
	p.update("h", h, 0, false, epoch)
	assert.Zero(t, p.reserve("h", epoch, noLimit).delay)
	// The answer to that request says the same: the slot promised stays.
	p.update("h", h, 0, false, epoch)
	assert.Equal(t, 10*time.Second, p.reserve("h", epoch, noLimit).delay)
}

func TestPacerIgnoresResponsesWithoutFields(t *testing.T) {
	p := newTestPacer(t, PacingConfig{})
	p.update("h", resp(200, "X-RateLimit-Remaining", "oops"), 0, false, epoch)
	assert.Zero(t, p.hosts.len())
}

func TestPacerBoundsHosts(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxHosts: 4})
	for i := range 50 {
		p.update(fmt.Sprint("h", i), resp(200, "RateLimit", `"p";r=0;t=10`), 0, false, epoch)
	}
	assert.Equal(t, 4, p.hosts.len())
}

func TestHostTableEvictsIdleFirst(t *testing.T) {
	busy := map[string]bool{"a": true, "b": true, "c": true}
	tab := newHostTable(4, func(v string, _ time.Time) bool { return !busy[v] })
	mk := func(v string) func() string { return func() string { return v } }
	tab.get("a", epoch, mk("a"))
	tab.get("idle", epoch.Add(time.Second), mk("idle"))
	tab.get("b", epoch.Add(2*time.Second), mk("b"))
	tab.get("c", epoch.Add(3*time.Second), mk("c"))
	tab.get("d", epoch.Add(4*time.Second), mk("d"))
	_, ok := tab.lookup("idle", epoch)
	assert.False(t, ok, "the idle entry goes first, though not the oldest")
	_, ok = tab.lookup("a", epoch.Add(5*time.Second))
	assert.True(t, ok)
	// Then the least recently used: "b" (a was just looked up).
	tab.get("e", epoch.Add(6*time.Second), mk("e"))
	tab.get("f", epoch.Add(7*time.Second), mk("f"))
	assert.Equal(t, 4, tab.len())
	_, ok = tab.lookup("a", epoch)
	assert.True(t, ok)
	assert.Equal(t, DefaultMaxHosts, newHostTable[int](0, nil).max)
}

func TestTransportPacesAttempts(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 200, header: map[string]string{
		"RateLimit-Policy": `"per-ip";q=100;w=60`,
		"RateLimit":        `"per-ip";r=1;t=10`,
	}})
	var rec recorder
	c := &http.Client{Transport: newTransport(t, nil, WithClock(clk), WithHooks(rec.hooks()))}
	for range 3 {
		get(t, c, srv.URL)
	}
	// The first request learns r=1; the second spends it at once; the
	// third waits for the slot 10s later instead of racing to a 429.
	assert.Equal(t, []time.Duration{10 * time.Second}, clk.Sleeps())
	require.Len(t, rec.paces, 1)
	e := rec.paces[0]
	assert.Equal(t, 10*time.Second, e.Delay)
	assert.Equal(t, "per-ip", e.Policy)
	assert.Equal(t, srv.Listener.Addr().String(), e.Host)
	assert.Equal(t, []time.Time{epoch, epoch, epoch.Add(10 * time.Second)}, srv.At())
}

func TestTransportPacingRespectsCancellation(t *testing.T) {
	clk := newFakeClock()
	clk.block = true
	clk.sleeping = make(chan time.Duration, 1)
	srv := newScriptServer(t, clk, answer{status: 200, header: map[string]string{"RateLimit": `"p";r=0;t=5`}})
	c := &http.Client{Transport: newTransport(t, nil, WithClock(clk))}
	get(t, c, srv.URL)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	errc := doAsync(c, req)
	assert.Equal(t, 5*time.Second, await(t, clk.sleeping, "the pacing wait"))
	cancel()
	assert.ErrorIs(t, await(t, errc, "the end of the cancelled pacing wait"), context.Canceled)
	assert.Equal(t, 1, srv.Hits(), "the paced request was never sent")
}

func TestPacerLimitSkipsWaitsThatCannotEndInTime(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxDelay: time.Minute})
	p.update("h", resp(200, "RateLimit", `"p";r=0;t=10`), 0, false, epoch)
	assert.Zero(t, p.reserve("h", epoch, 9*time.Second).delay, "10s does not fit in 9s")
	assert.Equal(t, 10*time.Second, p.reserve("h", epoch, 10*time.Second).delay)
}

func TestTransportDoesNotPacePastTheDeadline(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 200, header: map[string]string{"RateLimit": `"p";r=0;t=10`}})
	var rec recorder
	c := &http.Client{Transport: newTransport(t, nil, WithClock(clk), WithDeadline(5*time.Second), WithHooks(rec.hooks()))}
	get(t, c, srv.URL)
	get(t, c, srv.URL)
	assert.Empty(t, clk.Sleeps(), "a 10s pacing wait cannot fit a 5s deadline: sent at once")
	assert.Empty(t, rec.paces)
	assert.Equal(t, 2, srv.Hits())

	// With room for it, the same wait is taken.
	c = &http.Client{Transport: newTransport(t, nil, WithClock(clk), WithDeadline(11*time.Second))}
	get(t, c, srv.URL)
	get(t, c, srv.URL)
	assert.Equal(t, []time.Duration{10 * time.Second}, clk.Sleeps())
}
