package client

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func resp(code int, kv ...string) *http.Response {
	return &http.Response{StatusCode: code, Header: hdr(kv...)}
}

// delays reserves n attempts at now, and returns their waits: -1 for one
// refused.
func delays(p *pacer, host string, now time.Time, n int) []time.Duration {
	var out []time.Duration
	for range n {
		info := p.reserve(host, now, noLimit, nil)
		if info.refused {
			info.delay = -1
		}
		out = append(out, info.delay)
	}
	return out
}

// inTurn reserves n attempts one after another, each when the one before
// went, and returns their waits.
func inTurn(p *pacer, host string, now time.Time, n int) []time.Duration {
	var out []time.Duration
	for range n {
		info := p.reserve(host, now, noLimit, nil)
		out = append(out, info.delay)
		now = now.Add(info.delay)
	}
	return out
}

func TestPacerSpacesRequestsAtTheSustainedRate(t *testing.T) {
	p := newTestPacer(t, PacingConfig{})
	// The README's example: a bucket of 10 refilled at 2/s, after one request.
	p.update("h", resp(200, "RateLimit-Policy", `"per-ip";q=10;w=5`, "RateLimit", `"per-ip";r=9;t=1`), 0, false, epoch, epoch)
	ms := time.Millisecond
	// A tenth of 10 is one request: the next goes at once, then one every
	// 500ms (2/s), where the old pacer sent all nine and stalled for 5s.
	assert.Equal(t, []time.Duration{0, 500 * ms, 500 * ms, 500 * ms, 500 * ms}, inTurn(p, "h", epoch, 5))
	// The sustained rate outlives the reset (t=1s): it is the policy's.
	info := p.reserve("h", epoch.Add(2*time.Second), noLimit, nil)
	assert.Equal(t, 500*ms, info.delay)
	assert.Equal(t, PaceQuota, info.reason)
	assert.Equal(t, "per-ip", info.policy)
	assert.InDelta(t, 2.0, info.rate, 1e-9)
	// Past the window it is forgotten, and other hosts know nothing.
	assert.Zero(t, p.reserve("h", epoch.Add(5*time.Second), noLimit, nil).delay)
	assert.Zero(t, p.reserve("other", epoch, noLimit, nil).delay)
}

// TestPacerRefusesABacklog: attempts that arrive together wait for their
// slots only as far as the policy's burst allowance (at least one
// interval) reaches; past it they fail at once and take no slot, so that
// the client holds no more than the server would take at once, and never
// a slot its caller will not wait for.
func TestPacerRefusesABacklog(t *testing.T) {
	p := newTestPacer(t, PacingConfig{})
	p.update("h", resp(200, "RateLimit-Policy", `"p";q=10;w=5`, "RateLimit", `"p";r=9;t=1`), 0, false, epoch, epoch)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{0, 500 * ms, -1, -1}, delays(p, "h", epoch, 4), "a burst of one, then one interval")
	info := p.reserve("h", epoch, noLimit, nil)
	assert.True(t, info.refused)
	assert.Equal(t, time.Second, info.delay, "the wait it would have had")
	assert.Equal(t, []time.Duration{500 * ms, 500 * ms}, inTurn(p, "h", epoch.Add(500*ms), 2), "the refused took no slot")

	// 50/s with a burst of 5: 5 at once, 4 more within 80ms, then refused.
	p.update("g", resp(200, "RateLimit-Policy", `"p";q=50;w=1`, "RateLimit", `"p";r=49;t=1`), 0, false, epoch, epoch)
	d := delays(p, "g", epoch, 12)
	assert.Equal(t, []time.Duration{0, 0, 0, 0, 0, 20 * ms, 40 * ms, 60 * ms, 80 * ms, -1, -1, -1}, d)
}

// TestPacerRefundsTheSlotOfACanceledWait: a transport whose caller gives
// up during its paced wait gives its slot back, for the next attempt.
func TestPacerRefundsTheSlotOfACanceledWait(t *testing.T) {
	p := newTestPacer(t, PacingConfig{})
	p.update("h", resp(200, "RateLimit-Policy", `"p";q=10;w=5`, "RateLimit", `"p";r=9;t=1`), 0, false, epoch, epoch)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{0, 500 * ms}, delays(p, "h", epoch, 2))
	p.refund("h", epoch.Add(100*ms)) // the second gave up 100ms into its wait
	assert.Equal(t, 400*ms, p.reserve("h", epoch.Add(100*ms), noLimit, nil).delay, "its slot")
	p.refund("h", epoch.Add(900*ms)) // the schedule never moves back past now
	assert.Zero(t, p.reserve("h", epoch.Add(900*ms), noLimit, nil).delay)
	assert.Equal(t, 500*ms, p.reserve("h", epoch.Add(900*ms), noLimit, nil).delay)
}

// TestPacerSchedulesANewPolicyAfterThePromisedSlots: when the server
// replaces its policy (another name: its limit changed), the new one's
// schedule starts after the slots the old one promised to attempts under
// way, rather than beside them.
func TestPacerSchedulesANewPolicyAfterThePromisedSlots(t *testing.T) {
	p := newTestPacer(t, PacingConfig{BurstFraction: 0.01})
	p.update("h", resp(200, "RateLimit-Policy", `"c-50";q=50;w=1`, "RateLimit", `"c-50";r=49;t=1`), 0, false, epoch, epoch)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{0, 20 * ms}, delays(p, "h", epoch, 2))
	p.update("h", resp(200, "RateLimit-Policy", `"c-25";q=25;w=1`, "RateLimit", `"c-25";r=24;t=1`), 0, false, epoch, epoch)
	assert.Equal(t, []time.Duration{40 * ms, 40 * ms}, inTurn(p, "h", epoch, 2), "after the two promised, at 25/s")
}

// TestPacerPacesASpentQuotaAtItsSustainedRate: a spent quota that states
// its rate holds the client to that rate, not to the reset: a bucket
// refills while the client waits (a token bucket's reset is the time to
// full), and a client that shares a busy quota must not crawl. Without a
// stated rate, the reset it is.
func TestPacerPacesASpentQuotaAtItsSustainedRate(t *testing.T) {
	p := newTestPacer(t, PacingConfig{})
	p.update("h", resp(200, "RateLimit-Policy", `"p";q=10;w=5`, "RateLimit", `"p";r=0;t=3`), 0, false, epoch, epoch)
	info := p.reserve("h", epoch, noLimit, nil)
	assert.Equal(t, 500*time.Millisecond, info.delay, "one interval at 2/s, not the 3s to full")
	assert.InDelta(t, 2.0, info.rate, 1e-9)
	assert.Equal(t, 3*time.Second, info.reset)
	assert.Equal(t, []time.Duration{500 * time.Millisecond, 500 * time.Millisecond}, inTurn(p, "h", epoch.Add(500*time.Millisecond), 2), "no burst while spent")

	p.update("g", resp(200, "RateLimit", `"p";r=0;t=3`), 0, false, epoch, epoch)
	info = p.reserve("g", epoch, noLimit, nil)
	assert.Equal(t, 3*time.Second, info.delay, "no stated rate: the server said none until then")
	assert.Zero(t, info.rate)
}

func TestPacerLetsATenthOfTheQuotaGoBackToBack(t *testing.T) {
	p := newTestPacer(t, PacingConfig{})
	p.update("h", resp(200, "RateLimit-Policy", `"p";q=100;w=60`, "RateLimit", `"p";r=99;t=1`), 0, false, epoch, epoch)
	d := delays(p, "h", epoch, 12)
	assert.Equal(t, make([]time.Duration, 10), d[:10], "ten requests at once")
	assert.Equal(t, []time.Duration{600 * time.Millisecond, 1200 * time.Millisecond}, d[10:], "then 100/60s")
	// Quiet for a while, the client has its burst back.
	assert.Equal(t, make([]time.Duration, 10), delays(p, "h", epoch.Add(20*time.Second), 10))

	p = newTestPacer(t, PacingConfig{BurstFraction: 1})
	p.update("h", resp(200, "RateLimit-Policy", `"p";q=10;w=5`, "RateLimit", `"p";r=4;t=3`), 0, false, epoch, epoch)
	assert.Equal(t, []time.Duration{0, 0, 0, 0, 2 * time.Second}, delays(p, "h", epoch, 5),
		"never more than the units remaining: then no burst, the schedule at 2/s")
}

func TestPacerSpreadsRemainingUnitsWithoutAWindow(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxDelay: time.Minute})
	// The older fields say nothing of the window: 4 units over 20s, one
	// now, then every 5s; the fifth waits for the reset.
	p.update("h", resp(200, "X-RateLimit-Remaining", "4", "X-RateLimit-Reset", "20"), 0, false, epoch, epoch)
	s := time.Second
	assert.Equal(t, []time.Duration{0, 5 * s, 5 * s, 5 * s, 5 * s}, inTurn(p, "h", epoch, 5))
	// Once the window is over we know nothing better: no wait.
	assert.Zero(t, p.reserve("h", epoch.Add(20*s), noLimit, nil).delay)

	// A tenth of what remains may go at once.
	p.update("g", resp(200, "RateLimit-Limit", "100", "RateLimit-Remaining", "40", "RateLimit-Reset", "10"), 0, false, epoch, epoch)
	d := delays(p, "g", epoch, 5)
	assert.Equal(t, make([]time.Duration, 4), d[:4])
	assert.Equal(t, 250*time.Millisecond, d[4], "then 40 units over 10s")
}

func TestPacerPacesOnTheMostRestrictivePolicy(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxDelay: time.Hour})
	p.update("h", resp(200,
		"RateLimit-Policy", `"per-ip";q=100;w=60, "login";q=5;w=300`,
		"RateLimit", `"per-ip";r=42;t=17, "login";r=0;t=250`), 0, false, epoch, epoch)
	info := p.reserve("h", epoch, noLimit, nil)
	assert.Equal(t, time.Minute, info.delay, "spent: one interval at 5 per 300s")
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
	p.update("h", resp(200, "RateLimit", v), 0, false, epoch, epoch)
	assert.Equal(t, 99*time.Second, p.reserve("h", epoch, noLimit, nil).delay)
	ph, _ := p.hosts.lookup("h", epoch)
	assert.Equal(t, maxPacedPolicies, ph.n)
	assert.Equal(t, "tight", ph.policies[0].name)
}

func TestPacerMaxDelayRefusesWithoutSpendingTheSchedule(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxDelay: 15 * time.Second})
	p.update("h", resp(200, "RateLimit", `"day";r=0;t=3600`), 0, false, epoch, epoch)
	info := p.reserve("h", epoch, noLimit, nil)
	assert.True(t, info.refused, "an hour is not a pacing delay")
	assert.Equal(t, time.Hour, info.delay, "the wait the caller is told of")
}

// The bug of issue 22: once the computed wait passed MaxDelay, requests
// were sent at once but still advanced the schedule, which so ran ever
// further ahead: pacing never came back. A refused request now takes no
// slot, and pacing resumes as soon as the sent ones have gone.
func TestPacerResumesOnceTheBacklogPassedMaxDelayClears(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxDelay: time.Second, BurstFraction: 0.01})
	// 10 per second, a burst of one.
	p.update("h", resp(200, "RateLimit-Policy", `"p";q=100;w=10`, "RateLimit", `"p";r=100;t=10`), 0, false, epoch, epoch)
	sent, refused := 0, 0
	for range 100 { // a backlog: 100 requests at once
		if p.reserve("h", epoch, noLimit, nil).refused {
			refused++
		} else {
			sent++
		}
	}
	assert.Equal(t, 2, sent, "the ones that fit in the burst allowance: now, then 100ms")
	assert.Equal(t, 98, refused)
	// Two seconds on, the backlog has cleared: the next request goes at
	// once and the one after it is paced again, 100ms later.
	later := epoch.Add(2 * time.Second)
	assert.Equal(t, []time.Duration{0, 100 * time.Millisecond, 100 * time.Millisecond}, inTurn(p, "h", later, 3))
}

func TestPacerRetryAfterHoldsTheHost(t *testing.T) {
	p := newTestPacer(t, PacingConfig{})
	p.update("h", resp(503), 7*time.Second, true, epoch, epoch)
	info := p.reserve("h", epoch, noLimit, nil)
	assert.Equal(t, 7*time.Second, info.delay)
	assert.Equal(t, PaceRetryAfter, info.reason)
	assert.Empty(t, info.policy)
	assert.Zero(t, p.reserve("h", epoch.Add(7*time.Second), noLimit, nil).delay)

	// Not from a 200, and rate-limit fields take precedence.
	p.update("g", resp(200), 7*time.Second, true, epoch, epoch)
	assert.Zero(t, p.reserve("g", epoch, noLimit, nil).delay)
	p.update("f", resp(429, "RateLimit", `"p";r=0;t=3`), 7*time.Second, true, epoch, epoch)
	assert.Equal(t, 3*time.Second, p.reserve("f", epoch, noLimit, nil).delay)

	// A 429 without fields holds the host too, and starts learning its
	// rate: after the hold, requests are spaced.
	p.update("e", resp(429), 2*time.Second, true, epoch, epoch)
	assert.Equal(t, 2*time.Second, p.reserve("e", epoch, noLimit, nil).delay)
	info = p.reserve("e", epoch.Add(2*time.Second), noLimit, nil)
	assert.Equal(t, PaceLearnedRate, info.reason)
	// The rate starts at one per Retry-After, doubling every second: 2/s
	// two seconds in.
	assert.Equal(t, 500*time.Millisecond, info.delay)
	assert.InDelta(t, 2.0, info.rate, 1e-9)
}

func TestPacerKeepsPromisedSlotsAcrossUpdates(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxDelay: time.Minute})
	h := resp(200, "RateLimit", `"p";r=1;t=10`)
	p.update("h", h, 0, false, epoch, epoch)
	assert.Zero(t, p.reserve("h", epoch, noLimit, nil).delay)
	// The answer to that request says the same: the slot promised stays.
	p.update("h", h, 0, false, epoch, epoch)
	assert.Equal(t, 10*time.Second, p.reserve("h", epoch, noLimit, nil).delay)
}

func TestPacerIgnoresResponsesWithoutFields(t *testing.T) {
	p := newTestPacer(t, PacingConfig{})
	p.update("h", resp(200, "X-RateLimit-Remaining", "oops"), 0, false, epoch, epoch)
	assert.Zero(t, p.hosts.len())
}

func TestPacerBoundsHosts(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxHosts: 4})
	for i := range 50 {
		p.update(fmt.Sprint("h", i), resp(200, "RateLimit", `"p";r=0;t=10`), 0, false, epoch, epoch)
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
		"RateLimit-Policy": `"per-ip";q=10;w=5`,
		"RateLimit":        `"per-ip";r=9;t=1`,
	}})
	var rec recorder
	c := &http.Client{Transport: newTransport(t, nil, WithClock(clk), WithHooks(rec.hooks()))}
	for range 3 {
		get(t, c, srv.URL)
	}
	// The first request learns the policy; the second is the burst a tenth
	// of 10 allows; the third waits for its slot at 2/s instead of
	// spending the nine units left at once.
	assert.Equal(t, []time.Duration{500 * time.Millisecond}, clk.Sleeps())
	require.Len(t, rec.paces, 1)
	e := rec.paces[0]
	assert.Equal(t, 500*time.Millisecond, e.Delay)
	assert.Equal(t, PaceQuota, e.Reason)
	assert.Equal(t, "per-ip", e.Policy)
	assert.Equal(t, int64(9), e.Remaining)
	assert.Equal(t, time.Second, e.Reset)
	assert.InDelta(t, 2.0, e.Rate, 1e-9)
	assert.Equal(t, srv.Listener.Addr().String(), e.Host)
	assert.Equal(t, []time.Time{epoch, epoch, epoch.Add(500 * time.Millisecond)}, srv.At())
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

func TestPacerLimitRefusesWaitsThatCannotEndInTime(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxDelay: time.Minute})
	p.update("h", resp(200, "RateLimit", `"p";r=0;t=10`), 0, false, epoch, epoch)
	assert.True(t, p.reserve("h", epoch, 9*time.Second, nil).refused, "10s does not fit in 9s")
	info := p.reserve("h", epoch, 10*time.Second, nil)
	assert.False(t, info.refused)
	assert.Equal(t, 10*time.Second, info.delay)
}

func TestTransportDoesNotPacePastTheDeadline(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk, answer{status: 200, header: map[string]string{"RateLimit": `"p";r=0;t=10`}})
	var rec recorder
	c := &http.Client{Transport: newTransport(t, nil, WithClock(clk), WithDeadline(5*time.Second), WithHooks(rec.hooks()))}
	get(t, c, srv.URL)
	_, err := c.Get(srv.URL)
	var pe *PaceError
	require.ErrorAs(t, err, &pe, "a 10s pacing wait cannot fit a 5s deadline: failed at once")
	assert.ErrorIs(t, err, ErrPaceTooLong)
	assert.Equal(t, 10*time.Second, pe.Wait)
	assert.Equal(t, PaceQuota, pe.Reason)
	assert.Empty(t, clk.Sleeps())
	assert.Empty(t, rec.paces)
	assert.Equal(t, 1, srv.Hits(), "nothing sent that could only draw a 429")

	// With room for it, the same wait is taken.
	c = &http.Client{Transport: newTransport(t, nil, WithClock(clk), WithDeadline(11*time.Second))}
	get(t, c, srv.URL)
	get(t, c, srv.URL)
	assert.Equal(t, []time.Duration{10 * time.Second}, clk.Sleeps())
}

func TestPacerLearnsOnlyFrom429sWithoutFields(t *testing.T) {
	p := newTestPacer(t, PacingConfig{})
	p.update("fields", resp(429, "RateLimit", `"p";r=0;t=3`), 3*time.Second, true, epoch, epoch)
	p.update("overloaded", resp(503), 3*time.Second, true, epoch, epoch)
	assert.False(t, p.learning.Load(), "answers without fields need no lock yet")
	p.update("throttled", resp(429), 0, false, epoch, epoch)
	assert.True(t, p.learning.Load())
	for host, learned := range map[string]bool{"fields": false, "overloaded": false, "throttled": true} {
		h, ok := p.hosts.lookup(host, epoch)
		require.True(t, ok, host)
		assert.Equal(t, learned, h.learned != nil, host)
	}
	h, _ := p.hosts.lookup("throttled", epoch)
	assert.Zero(t, h.n, "no Retry-After, no hold")

	// Answers are counted for the next cut: accepted ones only, and only
	// for a host that has a learned rate.
	later := epoch.Add(time.Second)
	p.update("throttled", resp(200), 0, false, later, later)
	p.update("throttled", resp(404), 0, false, later, later)
	p.update("throttled", resp(500), 0, false, later, later)
	assert.Equal(t, int64(2), h.learned.accepted)
	p.update("unknown", resp(200), 0, false, later, later)
	_, ok := p.hosts.lookup("unknown", later)
	assert.False(t, ok)
}

func TestTransportLearnsFromRepeated429s(t *testing.T) {
	clk := newFakeClock()
	srv := newScriptServer(t, clk,
		answer{status: 200},
		answer{status: 429, header: map[string]string{"Retry-After": "1"}},
		answer{status: 429, header: map[string]string{"Retry-After": "1"}},
		answer{status: 200},
	)
	var rec recorder
	c := &http.Client{Transport: newTransport(t, nil, WithClock(clk), WithRandSource(seeded()), WithHooks(rec.hooks()))}
	for range 4 {
		assert.Equal(t, 200, get(t, c, srv.URL).StatusCode)
	}
	require.NotEmpty(t, rec.paces)
	for _, e := range rec.paces {
		assert.Equal(t, PaceLearnedRate, e.Reason)
		assert.Positive(t, e.Rate)
	}
	// Each attempt after the first 429 keeps to the learned rate: the
	// answers are spaced by at least its interval, however fast the
	// client asks.
	at := srv.At()
	require.Len(t, at, 6)
	for i := 3; i < len(at); i++ {
		assert.Greater(t, at[i].Sub(at[i-1]), 100*time.Millisecond, "attempt %d", i)
	}
}

func TestPacerIsSafeForConcurrentUse(t *testing.T) {
	p := newTestPacer(t, PacingConfig{MaxHosts: 4})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			now := epoch
			for i := range 200 {
				host := fmt.Sprint("h", (g+i)%6)
				now = now.Add(p.reserve(host, now, noLimit, nil).delay + time.Millisecond)
				switch i % 4 {
				case 0:
					p.update(host, resp(429), time.Second, true, now, now)
				case 1:
					p.update(host, resp(429), 0, false, now, now)
				case 2:
					p.update(host, resp(200, "RateLimit-Policy", `"p";q=10;w=5`, "RateLimit", `"p";r=3;t=2`), 0, false, now, now)
				default:
					p.update(host, resp(200), 0, false, now, now)
				}
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, p.hosts.len(), 4)
}
