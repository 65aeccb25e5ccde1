package admit_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/adapters/httplimit/httplimittest"
	"github.com/sluice-go/sluice/core"
)

// strictStore fails a call made under a context that is done, as a network
// store does, and counts the calls it is asked.
type strictStore struct {
	core.Store
	calls atomic.Int64
}

func (s *strictStore) Take(ctx context.Context, r core.Request) (core.Decision, error) {
	s.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return core.Decision{}, err
	}
	return s.Store.Take(ctx, r)
}

func (s *strictStore) TakeAll(ctx context.Context, rs []core.Request, ds []core.Decision) error {
	s.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Store.TakeAll(ctx, rs, ds)
}

func (s *strictStore) Adjust(ctx context.Context, r core.Request) (core.Decision, error) {
	s.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return core.Decision{}, err
	}
	return s.Store.Adjust(ctx, r)
}

func newStrict(t *testing.T) (*core.Limiter, *strictStore) {
	env := httplimittest.NewEnv(t)
	s := &strictStore{Store: env.Store}
	l, err := core.NewLimiter(s)
	require.NoError(t, err)
	return l, s
}

// A request's context is done once its client has gone (net/http cancels it
// when the handler returns, too): the units go back all the same.
func TestSettleOutlivesTheRequestContext(t *testing.T) {
	l, _ := newStrict(t)
	m, err := httplimit.New(admit.Config{Limiter: l, Rules: []admit.Rule{
		{Policy: httplimittest.LoginFailures, Key: admit.Const("k"), Charge: func(status int) bool { return status >= 400 }},
	}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	e := newExchange("192.0.2.1")
	e.ctx = ctx
	v := m.Decide(e, e)
	require.True(t, v.Proceed)
	require.NotNil(t, v.Settlement)
	assert.Nil(t, v.Reservation, "a charge is the middleware's to settle, not the handler's")
	cancel()
	v.Settlement.Settle(200)

	e = newExchange("192.0.2.1")
	require.True(t, m.Decide(e, e).Proceed)
	assert.Equal(t, `"login-failures";r=2;t=20`, e.set["Ratelimit"], "the first request's unit came back")
}

// Charge sees a panicking handler's status 0 as 500.
func TestSettleAfterPanic(t *testing.T) {
	var seen []int
	m, err := httplimit.New(admit.Config{Limiter: limiter(t), Rules: []admit.Rule{
		{Policy: httplimittest.LoginFailures, Key: admit.Const("k"), Charge: func(status int) bool {
			seen = append(seen, status)
			return false
		}},
	}})
	require.NoError(t, err)
	for _, status := range []int{0, 200, 404} {
		e := newExchange("192.0.2.1")
		v := m.Decide(e, e)
		require.NotNil(t, v.Settlement)
		v.Settlement.Settle(status)
	}
	assert.Equal(t, []int{500, 200, 404}, seen)
}

// More layers than the settlement keeps room for: each rule's units are
// settled by its own Charge, the others' kept.
func TestSettleManyLayers(t *testing.T) {
	var rules []admit.Rule
	for i := range 6 {
		p := core.MustPolicy(core.PolicyConfig{Name: "p" + strconv.Itoa(i), Algorithm: core.GCRA, Quota: 10, Period: time.Minute, Burst: 10})
		r := admit.Rule{Policy: p, Key: admit.Const("k")}
		if i%2 == 0 {
			r.Charge = func(status int) bool { return status >= 400 }
		}
		rules = append(rules, r)
	}
	l, s := newStrict(t)
	m, err := httplimit.New(admit.Config{Limiter: l, Rules: rules})
	require.NoError(t, err)
	e := newExchange("192.0.2.1")
	v := m.Decide(e, e)
	require.NotNil(t, v.Settlement)
	v.Settlement.Settle(200)
	assert.Equal(t, int64(1+3), s.calls.Load(), "one decision, three give-backs")

	ds := make([]core.Decision, len(rules))
	reqs := make([]core.Request, len(rules))
	for i, r := range rules {
		reqs[i] = core.Request{Key: "k", Policy: r.Policy, Cost: 1}
	}
	_, err = l.TakeAll(context.Background(), reqs, ds)
	require.NoError(t, err)
	for i, d := range ds {
		want := int64(8) // kept the first request's unit
		if i%2 == 0 {
			want = 9 // got it back
		}
		assert.Equal(t, want, d.Remaining, "rule %d", i)
	}
}

func TestSelectErrorsReachOnError(t *testing.T) {
	boom := errors.New("plans: db down")
	var got error
	m, err := httplimit.New(admit.Config{
		Limiter: limiter(t),
		Rules: []admit.Rule{
			{Policy: httplimittest.PerIP, Key: admit.ClientIP()},
			{
				Policies: []*core.Policy{httplimittest.Free, httplimittest.Pro},
				Select: func(r *admit.Request) (*core.Policy, error) {
					switch r.Header("X-Plan") {
					case "broken":
						return nil, boom
					case "rogue":
						return httplimittest.Internal, nil
					}
					return httplimittest.Pro, nil
				},
				Key: admit.Func(func(r *admit.Request) (string, error) {
					if r.Header("X-Key") == "" {
						return "", errors.New("no key")
					}
					return r.Header("X-Key"), nil
				}),
			},
		},
		OnError: func(_ *admit.Request, err error) *admit.Response { got = err; return nil },
	})
	require.NoError(t, err)
	decide := func(plan, key string) error {
		got = nil
		e := newExchange("192.0.2.1")
		e.header["X-Plan"] = []string{plan}
		e.header["X-Key"] = []string{key}
		require.True(t, m.Decide(e, e).Proceed)
		return got
	}

	err = decide("broken", "k")
	var se *admit.KeyError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 1, se.Rule)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, "admit: policy for rule 1 (free|pro): plans: db down", err.Error())

	err = decide("rogue", "k")
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "not among the rule's Policies")
	assert.Contains(t, err.Error(), `"internal"`)

	// A key error names the policy Select chose.
	err = decide("", "")
	var ke *admit.KeyError
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "pro", ke.Policy)

	assert.NoError(t, decide("", "k"))
}

// With more combinations of policies than are precomputed, the
// RateLimit-Policy value is built per request, naming the policies chosen.
func TestManyPoliciesPerRequest(t *testing.T) {
	var tiers []*core.Policy
	for i := range 300 {
		tiers = append(tiers, core.MustPolicy(core.PolicyConfig{Name: "t" + strconv.Itoa(i), Algorithm: core.GCRA, Quota: int64(i + 1), Period: time.Minute, Burst: int64(i + 1)}))
	}
	pick := func(r *admit.Request) (*core.Policy, error) {
		i, err := strconv.Atoi(r.Header("X-Tier"))
		if err != nil {
			return nil, admit.ErrNoKey
		}
		return tiers[i], nil
	}
	m, err := httplimit.New(admit.Config{Limiter: limiter(t), Rules: []admit.Rule{
		{Policy: httplimittest.PerIP, Key: admit.ClientIP()},
		{Policies: tiers, Select: pick, Key: admit.Const("k")},
	}})
	require.NoError(t, err)
	for _, tier := range []string{"0", "299", "41", ""} {
		e := newExchange("192.0.2.1")
		e.header["X-Tier"] = []string{tier}
		require.True(t, m.Decide(e, e).Proceed)
		want := httplimittest.PerIPPolicy
		if tier != "" {
			n, _ := strconv.Atoi(tier)
			want += fmt.Sprintf(`, "t%d";q=%d;w=60`, n, n+1)
		}
		assert.Equal(t, want, e.set["Ratelimit-Policy"], "tier %q", tier)
	}
}

// Exempt requests are left out before the store is asked.
func TestExemptAsksNoStore(t *testing.T) {
	l, s := newStrict(t)
	m, err := httplimit.New(admit.Config{Limiter: l, Rules: []admit.Rule{
		{Policy: httplimittest.PerIP, Key: admit.ClientIP().Except("192.0.2.0/24")},
		{Policy: httplimittest.PerKey, Key: admit.Header("X-API-Key").Except("internal")},
	}})
	require.NoError(t, err)
	for _, tc := range []struct {
		peer, apiKey string
		calls        int64
	}{
		{"192.0.2.9", "internal", 0},
		{"192.0.2.9", "", 0},
		{"198.51.100.1", "internal", 1},
		{"192.0.2.9", "k1", 1},
		{"198.51.100.1", "k1", 1}, // both rules, decided as one
	} {
		s.calls.Store(0)
		e := newExchange(tc.peer)
		if tc.apiKey != "" {
			e.header["X-Api-Key"] = []string{tc.apiKey}
		}
		require.True(t, m.Decide(e, e).Proceed)
		assert.Equal(t, tc.calls, s.calls.Load(), "peer %s, API key %q", tc.peer, tc.apiKey)
		assert.Equal(t, tc.calls > 0, e.set["Ratelimit"] != "", "peer %s, API key %q: fields", tc.peer, tc.apiKey)
	}
}

// Except returns a copy: the key it was called on exempts what it did.
func TestExceptCopies(t *testing.T) {
	base := admit.ClientIP()
	one := base.Except("192.0.2.1")
	two := one.Except("198.51.100.0/24")
	for _, tc := range []struct {
		key    admit.Key
		exempt map[string]bool
	}{
		{base, map[string]bool{"192.0.2.1": false, "198.51.100.7": false}},
		{one, map[string]bool{"192.0.2.1": true, "198.51.100.7": false}},
		{two, map[string]bool{"192.0.2.1": true, "198.51.100.7": true, "192.0.2.2": false}},
	} {
		for peer, exempt := range tc.exempt {
			_, err := keyOf(t, tc.key, newExchange(peer))
			assert.Equal(t, exempt, errors.Is(err, admit.ErrNoKey), "peer %s", peer)
		}
	}

	header := admit.Header("X-Api-Key")
	except := header.Except("a", "b")
	for value, exempt := range map[string]bool{"a": true, "b": true, "ab": false, "A": false, "": true} {
		e := newExchange("192.0.2.1")
		if value != "" {
			e.header["X-Api-Key"] = []string{value}
		}
		k, err := keyOf(t, except, e)
		assert.Equal(t, exempt, errors.Is(err, admit.ErrNoKey), "key %q", value)
		if !exempt {
			assert.Equal(t, value, k)
		}
	}
}

// A key built on the fly, which New never checked, fails the request rather
// than exempting or keying it.
func TestUncheckedExceptFails(t *testing.T) {
	for _, bad := range []admit.Key{admit.ClientIP().Except("not-an-address"), admit.KeyFunc(nil).Except("k")} {
		_, err := keyOf(t, admit.KeyFunc(func(dst []byte, r *admit.Request) ([]byte, error) {
			return bad.AppendKey(dst, r)
		}), newExchange("192.0.2.1"))
		require.Error(t, err)
		assert.False(t, errors.Is(err, admit.ErrNoKey))
		assert.True(t, strings.HasPrefix(err.Error(), "Except") || strings.Contains(err.Error(), "nil key"), err.Error())
	}
}
