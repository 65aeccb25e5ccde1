package admit_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/admit/explain"
	"github.com/sluice-go/sluice/adapters/httplimit/httplimittest"
	"github.com/sluice-go/sluice/core"
)

// recorder keeps the events an observer sees.
type recorder struct {
	mu     sync.Mutex
	events []core.Event
}

func (r *recorder) observe(_ context.Context, e core.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) take() []core.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.events
	r.events = nil
	return ev
}

// engineOn builds an engine on a fresh memory store and manual clock,
// with rules, recording the limiter's events.
func engineOn(t *testing.T, rules []admit.Rule) (*admit.Engine, *httplimittest.Env, *recorder) {
	t.Helper()
	env := httplimittest.NewEnv(t)
	rec := &recorder{}
	l, err := core.NewLimiter(env.Store, core.WithObserver(rec.observe), core.WithClock(env.Clock))
	require.NoError(t, err)
	e, err := admit.New(admit.Config{Limiter: l, Rules: rules})
	require.NoError(t, err)
	rec.take() // each policy's Configured
	return e, env, rec
}

func policy(t *testing.T, name string, alg core.Algorithm, quota int64, period time.Duration, burst int64) *core.Policy {
	p, err := core.NewPolicy(core.PolicyConfig{Name: name, Algorithm: alg, Quota: quota, Period: period, Burst: burst})
	require.NoError(t, err)
	return p
}

// traceStep is one request of a recorded trace: the time that passed
// before it, its client, its API key.
type traceStep struct {
	advance time.Duration
	ip      string
	apiKey  string
}

func recordedTrace(n int) []traceStep {
	rnd := rand.New(rand.NewPCG(7, 31))
	steps := make([]traceStep, n)
	for i := range steps {
		steps[i] = traceStep{
			advance: time.Duration(rnd.IntN(3000)) * time.Microsecond,
			ip:      "192.0.2." + strconv.Itoa(rnd.IntN(40)),
			apiKey:  "key-" + strconv.Itoa(rnd.IntN(25)),
		}
	}
	return steps
}

// Shadow on a replayed trace denies exactly what enforcement denies: the
// same 100,000 requests, once with every rule enforced and once with every
// rule in shadow, give the same decisions, the shadow ones reported as
// such and none of them answered.
func TestShadowDeniesWhatEnforcementDenies(t *testing.T) {
	rules := func(shadow float64) []admit.Rule {
		return []admit.Rule{
			{Policy: policy(t, "per-ip", core.GCRA, 10, time.Second, 3), Key: admit.ClientIP(), Shadow: shadow},
			{Policy: policy(t, "per-key", core.SlidingCounter, 20, time.Second, 0), Key: admit.Header("X-Api-Key"), Shadow: shadow},
			{Policy: policy(t, "per-key-window", core.FixedWindow, 12, 500*time.Millisecond, 0), Key: admit.Header("X-Api-Key"), Shadow: shadow},
		}
	}
	trace := recordedTrace(100_000)
	run := func(shadow float64) (denials []string, answered int, events []core.Event) {
		e, env, rec := engineOn(t, rules(shadow))
		for i, s := range trace {
			env.Clock.Advance(s.advance)
			x := newExchange(s.ip)
			x.header["X-Api-Key"] = []string{s.apiKey}
			v := e.Decide(x, x)
			if !v.Proceed {
				answered++
			}
			ev := rec.take()
			require.Len(t, ev, 1, "request %d", i)
			require.Equal(t, shadow != 0, ev[0].Shadow)
			if ev[0].Kind == core.Denied {
				denials = append(denials, strconv.Itoa(i)+":"+ev[0].Decision.Policy.Name()+":"+strconv.FormatInt(ev[0].Decision.Remaining, 10))
			}
		}
		return denials, answered, events
	}
	enforced, answered, _ := run(0)
	shadowed, answeredShadow, _ := run(1)
	require.Greater(t, len(enforced), 1000, "the trace must exercise denials")
	assert.Equal(t, len(enforced), answered)
	assert.Zero(t, answeredShadow, "a shadow rule never denies")
	assert.Equal(t, enforced, shadowed)
}

// A rule enforced for 10% of keys enforces it for 10% ± 1% of them, the
// same keys on another instance, and raising the share only adds keys.
func TestEnforcedShareIsStablePerKey(t *testing.T) {
	const keys = 100_000
	enforcedKeys := func(shadow float64) map[int]bool {
		p := policy(t, "per-key", core.GCRA, 1, time.Hour, 1)
		e, _, rec := engineOn(t, []admit.Rule{{Policy: p, Key: admit.Header("X-Api-Key"), Shadow: shadow}})
		enforced := map[int]bool{}
		for k := range keys {
			for n := range 2 { // the second request of a key is over its limit
				x := newExchange("192.0.2.1")
				x.header["X-Api-Key"] = []string{"key-" + strconv.Itoa(k)}
				v := e.Decide(x, x)
				ev := rec.take()
				if n == 1 {
					require.Equal(t, core.Denied, ev[0].Kind)
					if !v.Proceed {
						enforced[k] = true
						require.False(t, ev[0].Shadow)
					} else {
						require.True(t, ev[0].Shadow)
					}
				}
			}
		}
		return enforced
	}
	ten := enforcedKeys(0.9)
	assert.InDelta(t, 0.10, float64(len(ten))/keys, 0.01, "%d keys enforced", len(ten))
	assert.Equal(t, ten, enforcedKeys(0.9), "another instance enforces the same keys")
	twenty := enforcedKeys(0.8)
	assert.InDelta(t, 0.20, float64(len(twenty))/keys, 0.01)
	for k := range ten {
		require.True(t, twenty[k], "key %d enforced at 10%% but not at 20%%", k)
	}
}

// Every denial in a run has an explanation naming the policy that decided
// it, which is the one the client is told violated, and every rule's
// outcome with its standing.
func TestEveryDenialExplained(t *testing.T) {
	perIP := policy(t, "per-ip", core.GCRA, 20, time.Second, 5)
	perKey := policy(t, "per-key", core.TokenBucket, 10, time.Second, 3)
	shadowed := policy(t, "per-key-new", core.GCRA, 5, time.Second, 1)
	login := policy(t, "login", core.FixedWindow, 3, time.Minute, 0)
	rules := []admit.Rule{
		{Policy: perIP, Key: admit.ClientIP()},
		{Policy: perKey, Key: admit.Header("X-Api-Key")},
		{Policy: shadowed, Key: admit.Header("X-Api-Key"), Shadow: 1},
		{Policy: login, Key: admit.ClientIP(), Routes: []string{"/login"}},
	}
	env := httplimittest.NewEnv(t)
	rec := &recorder{}
	l, err := core.NewLimiter(env.Store, core.WithObserver(rec.observe), core.WithClock(env.Clock))
	require.NoError(t, err)
	var violated []string
	e, err := admit.New(admit.Config{Limiter: l, Rules: rules, Deny: func(_ *admit.Request, d *admit.Denial) admit.Response {
		violated = violated[:0]
		for name := range d.Violated() {
			violated = append(violated, name)
		}
		return admit.Response{Status: d.Status}
	}})
	require.NoError(t, err)
	rec.take() // each policy's Configured
	denials := 0
	for i, s := range recordedTrace(5_000) {
		env.Clock.Advance(s.advance * 10)
		x := newExchange(s.ip)
		if i%3 == 0 {
			x.header["X-Api-Key"] = []string{s.apiKey}
		}
		if i%5 == 0 {
			x.route = "/login"
		}
		v, ex := e.Explain(x, x)
		ev := rec.take()
		require.NotNil(t, ex)
		require.Len(t, ex.Rules, 4)
		assert.Equal(t, v.Proceed, ex.Proceed)
		if i%5 != 0 {
			assert.Equal(t, "route", ex.Rules[3].Why)
		}
		if i%3 != 0 {
			assert.Equal(t, "no key", ex.Rules[1].Why)
		}
		if v.Proceed {
			continue
		}
		denials++
		require.Equal(t, 429, x.status)
		require.NotEmpty(t, ex.Decider, "denial %d unexplained", i)
		assert.Contains(t, violated, ex.Decider, "the client is told the deciding policy")
		assert.Equal(t, ev[0].Decision.Policy.Name(), ex.Decider)
		found := false
		for _, r := range ex.Rules {
			if r.Policy == ex.Decider {
				found = true
				assert.True(t, r.Applied && r.Decided && !r.Allowed && !r.Shadow)
				assert.Equal(t, r.Before, r.After, "a denied request takes nothing")
				assert.NotEmpty(t, r.Key)
			}
		}
		assert.True(t, found)
	}
	assert.Greater(t, denials, 100)
}

// An explanation gives each layer's standing before and after the request.
func TestExplainBeforeAfter(t *testing.T) {
	p := policy(t, "per-ip", core.GCRA, 10, time.Second, 5)
	s := policy(t, "per-ip-next", core.GCRA, 10, time.Second, 2)
	e, _, _ := engineOn(t, []admit.Rule{{Policy: p, Key: admit.ClientIP()}, {Policy: s, Key: admit.ClientIP(), Shadow: 1}})
	var last *explain.Explanation
	for range 3 {
		x := newExchange("192.0.2.9")
		_, last = e.Explain(x, x)
	}
	r := last.Rules[0]
	assert.Equal(t, explain.State{Remaining: 3, Limit: 5}, explain.State{Remaining: r.Before.Remaining, Limit: r.Before.Limit})
	assert.Equal(t, int64(2), r.After.Remaining)
	assert.Equal(t, "192.0.2.9", r.Key)
	sh := last.Rules[1]
	assert.True(t, sh.Shadow && sh.Decided && !sh.Allowed, "%+v", sh)
	assert.True(t, last.Proceed)
	assert.Equal(t, "per-ip", last.Decider)
}

// The explain header explains one request to whoever has the secret, in
// a response header whose keys are hashed; any other value is ignored.
func TestExplainHeader(t *testing.T) {
	l := limiter(t)
	secret := "0123456789abcdef-secret"
	var recorded []*explain.Explanation
	cfg := admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.ClientIP()}},
		Explain: explain.Options{Secret: secret, Record: func(x *explain.Explanation) { recorded = append(recorded, x) }}}
	e, err := admit.New(cfg)
	require.NoError(t, err)

	for _, guess := range []string{"", "0123456789abcdef", secret + "x", "0123456789abcdef-secreT"} {
		x := newExchange("192.0.2.9")
		x.header["Sluice-Explain"] = []string{guess}
		require.True(t, e.Decide(x, x).Proceed)
		assert.Empty(t, x.set["Sluice-Explain-Result"], "guess %q", guess)
	}
	assert.Empty(t, recorded)

	x := newExchange("192.0.2.9")
	x.header["Sluice-Explain"] = []string{secret}
	require.True(t, e.Decide(x, x).Proceed)
	got := x.set["Sluice-Explain-Result"]
	require.NotEmpty(t, got)
	assert.NotContains(t, got, "192.0.2.9", "keys never go to the client")
	var ex explain.Explanation
	require.NoError(t, json.Unmarshal([]byte(got), &ex))
	assert.Equal(t, "per-ip", ex.Decider)
	assert.Len(t, ex.Rules[0].KeyHash, 32)
	require.Len(t, recorded, 1)
	assert.Equal(t, "192.0.2.9", recorded[0].Rules[0].Key, "Record gets the keys")

	for _, bad := range []explain.Options{{Secret: "short"}, {Header: "X-Explain"}} {
		cfg.Explain = bad
		_, err := admit.New(cfg)
		assert.Error(t, err)
	}
}

// Swap under load: requests decided while the rules are swapped many
// times never fail, each sees one rule set whole, and an unchanged policy
// keeps its counts.
func TestSwapUnderLoadKeepsCounts(t *testing.T) {
	kept := policy(t, "kept", core.GCRA, 1, time.Hour, 1_000_000)
	env := httplimittest.NewEnv(t)
	l, err := core.NewLimiter(env.Store, core.WithClock(env.Clock))
	require.NoError(t, err)
	swapper := new(admit.Swapper)
	e, err := admit.New(admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: kept, Key: admit.Const("all")}}, Swapper: swapper})
	require.NoError(t, err)
	var sent, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				x := newExchange("192.0.2.1")
				v := e.Decide(x, x)
				sent.Add(1)
				if !v.Proceed || x.written {
					failed.Add(1)
				}
			}
		})
	}
	for i := range 200 {
		for sent.Load() < int64(i*20) {
			runtime.Gosched() // requests flow between swaps
		}
		other := policy(t, "other-"+strconv.Itoa(i), core.GCRA, 1000, time.Second, 1_000_000)
		rules := []admit.Rule{{Policy: kept, Key: admit.Const("all")}, {Policy: other, Key: admit.ClientIP()}}
		if i%2 == 1 {
			rules = rules[:1]
		}
		require.NoError(t, swapper.Swap(rules))
	}
	close(stop)
	wg.Wait()
	assert.Zero(t, failed.Load())
	assert.GreaterOrEqual(t, sent.Load(), int64(199*20))
	d, err := env.Store.Adjust(context.Background(), core.Request{Key: "all", Policy: kept, Cost: 0})
	require.NoError(t, err)
	assert.Equal(t, 1_000_000-sent.Load(), d.Remaining, "no reset of the unchanged policy")

	err = swapper.Swap([]admit.Rule{{Policy: kept}})
	assert.ErrorContains(t, err, "Key is nil")
	x := newExchange("192.0.2.1")
	assert.True(t, e.Decide(x, x).Proceed, "a refused swap leaves the rules in force")
}
