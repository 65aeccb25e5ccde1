package httplimittest

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
)

// The concurrent checks send concurrentRequests at once, half of them
// failed logins, against a limit of concurrentQuota failures.
const (
	concurrentRequests = 200
	concurrentQuota    = 10
)

// concurrentFailures is the limit of the concurrent checks: 10 failed logins
// per hour, with a clock that never moves, so that nothing refills.
var concurrentFailures = core.MustPolicy(core.PolicyConfig{Name: "failures", Algorithm: core.GCRA, Quota: concurrentQuota, Period: time.Hour, Burst: concurrentQuota})

// checkChargeHeld shows what reserving before the handler means: while
// every admitted request is still running (the store holds their
// give-backs until all the requests have been decided), exactly the quota
// of requests is admitted, whether they end up failing or not. Once they
// have finished, the failures alone stay counted.
func checkChargeHeld(t *testing.T, h Harness) {
	env := NewEnv(t)
	gate := &gatedStore{Store: env.Store, n: concurrentRequests, open: make(chan struct{})}
	srv := h(t, failuresConfig(t, env, gate), Routes)
	if deadline, ok := t.Deadline(); ok {
		// A request that never reaches the store would hold the others
		// forever: fail before go test's own timeout, which reports nothing.
		timer := time.AfterFunc(time.Until(deadline)*9/10, func() {
			t.Errorf("%d of %d requests decided when the test ran out of time", gate.decided.Load(), concurrentRequests)
			gate.release()
		})
		defer timer.Stop()
	}
	passed, failed := sendConcurrently(t, srv)
	assert.Equal(t, concurrentQuota, passed, "requests admitted while none had finished")
	assert.Equal(t, int64(concurrentRequests), gate.decided.Load(), "decisions")
	assert.Equal(t, concurrentQuota-failed, remaining(t, srv), "units left: the quota less the failures admitted (%d)", failed)
}

// checkChargeConcurrent sends the requests without holding anything back:
// the failures admitted never exceed the quota, and once every request has
// finished, exactly they are counted.
func checkChargeConcurrent(t *testing.T, h Harness) {
	env := NewEnv(t)
	srv := h(t, failuresConfig(t, env, env.Store), Routes)
	passed, failed := sendConcurrently(t, srv)
	assert.LessOrEqual(t, failed, concurrentQuota, "failures admitted")
	assert.GreaterOrEqual(t, passed, concurrentQuota, "requests admitted: at least the quota, since successes give their units back")
	assert.Equal(t, concurrentQuota-failed, remaining(t, srv), "units left: the quota less the failures admitted (%d)", failed)
}

// failuresConfig limits failed POST /login requests on store.
func failuresConfig(t *testing.T, e *Env, store core.Store) admit.Config {
	return admit.Config{Limiter: e.Limiter(t, store), Rules: []admit.Rule{
		{Policy: concurrentFailures, Key: admit.Const("everyone"), Routes: []string{"POST /login"}, Charge: func(status int) bool { return status >= 400 }},
	}}
}

// sendConcurrently sends concurrentRequests POST /login requests at once,
// every other one a failed login, and returns how many were admitted and
// how many of those failed. Any other answer than 200, 401 or 429 fails the
// test.
func sendConcurrently(t *testing.T, srv Server) (passed, failed int) {
	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		statuses = make([]int, concurrentRequests)
	)
	for i := range concurrentRequests {
		req := Req{Method: http.MethodPost, Path: "/login"}
		if i%2 == 0 {
			req.Header = failing
		}
		wg.Go(func() {
			<-start
			statuses[i] = srv(req).Status
		})
	}
	close(start)
	wg.Wait()
	for i, s := range statuses {
		switch s {
		case http.StatusOK:
			passed++
		case http.StatusUnauthorized:
			passed++
			failed++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("request %d: status %d", i, s)
		}
	}
	return passed, failed
}

// remaining returns the units left under concurrentFailures, read from a
// successful login's RateLimit field (which counts its own unit, given back
// after it); 0 if it is denied.
func remaining(t *testing.T, srv Server) int {
	resp := srv(Req{Method: http.MethodPost, Path: "/login"})
	if resp.Status == http.StatusTooManyRequests {
		return 0
	}
	require.Equal(t, http.StatusOK, resp.Status)
	field := resp.Header.Get("RateLimit") // "failures";r=N;t=T
	_, rest, ok := strings.Cut(field, ";r=")
	require.Truef(t, ok, "RateLimit %q", field)
	r, _, _ := strings.Cut(rest, ";")
	n, err := strconv.Atoi(r)
	require.NoErrorf(t, err, "RateLimit %q", field)
	return n // the probe, a success, reports the standing with its unit given back
}

// gatedStore holds every give-back (Adjust) until n decisions have been
// taken, so that every admitted request holds its units while the others
// are decided.
type gatedStore struct {
	core.Store
	n       int64
	decided atomic.Int64
	open    chan struct{} // closed at the n-th decision
	once    sync.Once
}

func (g *gatedStore) Take(ctx context.Context, r core.Request) (core.Decision, error) {
	defer g.count()
	return g.Store.Take(ctx, r)
}

func (g *gatedStore) TakeAll(ctx context.Context, rs []core.Request, ds []core.Decision) error {
	defer g.count()
	return g.Store.TakeAll(ctx, rs, ds)
}

func (g *gatedStore) Adjust(ctx context.Context, r core.Request) (core.Decision, error) {
	<-g.open
	return g.Store.Adjust(ctx, r)
}

func (g *gatedStore) count() {
	if g.decided.Add(1) == g.n {
		g.release()
	}
}

func (g *gatedStore) release() { g.once.Do(func() { close(g.open) }) }

// checkBadRules checks that the adapter's constructor refuses rules that
// New must: a policy chosen per request without a set or a function, a
// Charge on a window algorithm or with Config.Estimates, a shaping queue with
// Config.Estimates, an exempt address that is not one.
func checkBadRules(t *testing.T, a Adapter) {
	ip := admit.ClientIP()
	for _, tc := range []struct {
		rule    admit.Rule
		reserve bool
		want    string
	}{
		{admit.Rule{Key: ip}, false, "rule 0: Policy is nil"},
		{admit.Rule{Policy: Free, Policies: []*core.Policy{Free, Pro}, Select: PlanOf, Key: ip}, false, "rule 0: Policy is set as well as Policies or Select"},
		{admit.Rule{Policies: []*core.Policy{Free, Pro}, Key: ip}, false, "rule 0: Policies without Select"},
		{admit.Rule{Select: PlanOf, Key: ip}, false, "rule 0: Select without Policies"},
		{admit.Rule{Policies: []*core.Policy{Free, nil}, Select: PlanOf, Key: ip}, false, "rule 0: Policies[1] is nil"},
		{admit.Rule{Policies: []*core.Policy{Free, Pro, Free}, Select: PlanOf, Key: ip}, false, `rule 0 (free|pro|free) lists policy name "free" twice`},
		{admit.Rule{Policies: []*core.Policy{Free, Pro}, Select: PlanOf}, false, "rule 0 (free|pro): Key is nil"},
		{admit.Rule{Policy: Login, Key: ip, Charge: func(status int) bool { return status >= 400 }}, false, "rule 0 (login): Charge needs a policy of the bucket family"},
		{admit.Rule{Policies: []*core.Policy{Free, Login}, Select: PlanOf, Key: ip, Charge: func(status int) bool { return status >= 400 }}, false, "rule 0 (free|login): Charge needs a policy of the bucket family"},
		{admit.Rule{Policy: LoginFailures, Key: ip, Charge: func(status int) bool { return status >= 400 }}, true, "rule 0 (login-failures): Charge and Config.Estimates"},
		{admit.Rule{Policy: Shaped, Key: ip}, true, "rule 0 (shaped): shaped is a LeakyQueue, whose requests wait for their turn, and Config.Estimates"},
		{admit.Rule{Policy: Shaped, Key: ip, Charge: func(status int) bool { return status >= 400 }}, false, "rule 0 (shaped): Charge needs a policy of the bucket family"},
		{admit.Rule{Policy: PerIP, Key: ip.Except("10.0.0.0/8", "10.0.0.0/33")}, false, `rule 0 (per-ip): Key: Except "10.0.0.0/33"`},
		{admit.Rule{Policy: PerIP, Key: admit.Join(ip.Except("bogus"))}, false, `rule 0 (per-ip): Key: Join part 0: Except "bogus"`},
		{admit.Rule{Policy: PerIP, Key: admit.KeyFunc(nil).Except("k")}, false, "rule 0 (per-ip): Key is nil"},
	} {
		env := NewEnv(t)
		err := a.New(admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{tc.rule}, Estimates: tc.reserve})
		if assert.Errorf(t, err, "want %q", tc.want) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
	env := NewEnv(t)
	err := a.New(admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{
		{Policy: PerIP, Key: ip.Except("10.0.0.0/8", "192.0.2.1", "2001:db8::/32", "::ffff:198.51.100.0/120")},
		{Policies: []*core.Policy{Free, Pro}, Select: PlanOf, Key: admit.Header("X-API-Key").Except("k")},
		{Policy: LoginFailures, Key: ip, Charge: func(status int) bool { return status >= 400 }},
	}})
	assert.NoError(t, err)
	err = a.New(admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{
		{Policy: PerIP, Key: ip},
		{Policies: []*core.Policy{Free, PerIP}, Select: PlanOf, Key: ip},
	}})
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), `rules 0 and 1 both use policy name "per-ip"`)
	}
}
