package admit_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/adapters/httplimit/httplimittest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// exchange is a minimal View and Writer.
type exchange struct {
	ctx     context.Context
	peer    netip.Addr
	header  map[string][]string
	route   string
	set     map[string]string
	status  int
	body    string
	written bool
}

func newExchange(peer string) *exchange {
	return &exchange{ctx: context.Background(), peer: netip.MustParseAddr(peer), header: map[string][]string{}, set: map[string]string{}}
}

func (e *exchange) Context() context.Context { return e.ctx }
func (e *exchange) Peer() netip.Addr         { return e.peer }
func (e *exchange) Header(name string) string {
	if v := e.header[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}
func (e *exchange) HeaderValues(name string) []string { return e.header[name] }
func (e *exchange) Method() string                    { return "GET" }
func (e *exchange) Path() string                      { return "/" }
func (e *exchange) Route() string                     { return e.route }
func (e *exchange) SetHeader(k, v string)             { e.set[k] = v }
func (e *exchange) ResponseHeader(k string) string    { return e.set[k] }
func (e *exchange) WriteResponse(status int, ct string, body []byte) {
	e.status, e.body, e.written = status, string(body), true
	e.set["Content-Type"] = ct
}

func limiter(t *testing.T) *core.Limiter { return httplimittest.NewEnv(t).Limiter(t, nil) }

func TestNewValidates(t *testing.T) {
	l := limiter(t)
	ip := admit.ClientIP()
	good := []admit.Rule{{Policy: httplimittest.PerIP, Key: ip}}
	for _, tc := range []struct {
		name string
		cfg  admit.Config
		want string
	}{
		{"no limiter", admit.Config{Rules: good}, "Limiter is nil"},
		{"no rules", admit.Config{Limiter: l}, "Rules is empty"},
		{"nil policy", admit.Config{Limiter: l, Rules: []admit.Rule{{Key: ip}}}, "rule 0: Policy is nil"},
		{"nil key", admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: httplimittest.PerIP}}}, "rule 0 (per-ip): Key is nil"},
		{"duplicate policy", admit.Config{Limiter: l, Rules: append(good, good[0])}, `rules 0 and 1 both use policy name "per-ip"`},
		{"two PerMinute(5)", admit.Config{Limiter: l, Rules: []admit.Rule{
			{Policy: core.PerMinute(5), Key: ip},
			{Policy: core.PerMinute(5), Key: admit.Header("X-Api-Key")},
		}}, `rules 0 and 1 both use policy name "5-per-minute": a policy's name identifies it in the header fields, the problem body and the store's keys; give each its own with core.PolicyConfig's Name`},
		{"bad cidr", admit.Config{Limiter: l, Rules: good, TrustedProxies: []string{"10.0.0.0/33"}}, `trusted proxy "10.0.0.0/33"`},
		{"not an address", admit.Config{Limiter: l, Rules: good, TrustedProxies: []string{"proxy.local"}}, `trusted proxy "proxy.local"`},
		{"ipv6 prefix too long", admit.Config{Limiter: l, Rules: good, IPv6Prefix: 129}, "IPv6Prefix must be 1 to 128, got 129"},
		{"ipv6 prefix negative", admit.Config{Limiter: l, Rules: good, IPv6Prefix: -1}, "IPv6Prefix must be 1 to 128, got -1"},
		{"header style", admit.Config{Limiter: l, Rules: good, Headers: "rfc"}, `Config.Headers "rfc" is none of`},
		{"proxy header", admit.Config{Limiter: l, Rules: good, ProxyHeader: "X-Client-IP"}, `Config.ProxyHeader "X-Client-IP" is none of`},
		{"join of nothing", admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.Join()}}},
			"rule 0 (per-ip): Key is a Join of no keys"},
		{"join of nil", admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.Join(ip, nil)}}},
			"rule 0 (per-ip): Key: Join part 1 is nil"},
		{"nested join of nothing", admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.Join(ip, admit.Join())}}},
			"rule 0 (per-ip): Key: Join part 1 is a Join of no keys"},
		// A typed nil would panic on the first request (or key every request
		// alike): refused like an untyped one.
		{"nil pointer key", admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: httplimittest.PerIP, Key: (*prefixKey)(nil)}}},
			"rule 0 (per-ip): Key is a nil *admit_test.prefixKey"},
		{"nil func key", admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: httplimittest.PerIP, Key: funcKey(nil)}}},
			"rule 0 (per-ip): Key is a nil admit_test.funcKey"},
		{"join of a nil pointer", admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.Join(ip, (*prefixKey)(nil))}}},
			"rule 0 (per-ip): Key: Join part 1 is a nil *admit_test.prefixKey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := httplimit.New(tc.cfg)
			assert.Nil(t, m)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := httplimit.New(admit.Config{Limiter: l, Rules: good, TrustedProxies: []string{"10.0.0.0/8", "192.0.2.1", "::ffff:198.51.100.0/120", "2001:db8::/48"}})
	require.NoError(t, err)
	_, err = httplimit.New(admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: httplimittest.PerIP, Key: &prefixKey{"k"}}}})
	require.NoError(t, err)
}

// prefixKey and funcKey are Keys of the user's own types.
type prefixKey struct{ prefix string }

func (k *prefixKey) AppendKey(dst []byte, _ *admit.Request) ([]byte, error) {
	return append(dst, k.prefix...), nil
}

type funcKey func() string

func (f funcKey) AppendKey(dst []byte, _ *admit.Request) ([]byte, error) {
	return append(dst, f()...), nil
}

func TestTrustedProxyForms(t *testing.T) {
	trust := func(c *admit.Config) { c.TrustedProxies = []string{"::ffff:198.51.100.0/120", "192.0.2.1"} }
	for peer, want := range map[string]string{
		"198.51.100.77":        "203.0.113.1", // inside the mapped prefix, compared unmapped
		"::ffff:198.51.100.78": "203.0.113.1",
		"192.0.2.1":            "203.0.113.1",
		"192.0.2.2":            "192.0.2.2",
	} {
		e := newExchange(peer)
		e.header["X-Forwarded-For"] = []string{"203.0.113.1"}
		key, err := keyWith(t, admit.ClientIP(), e, trust)
		require.NoError(t, err)
		assert.Equal(t, want, key, "peer %s", peer)
	}
}

// keyOf returns the key k gives for e.
func keyOf(t *testing.T, k admit.Key, e *exchange) (string, error) {
	t.Helper()
	return keyWith(t, k, e, nil)
}

// keyWith is keyOf under a config edit.
func keyWith(t *testing.T, k admit.Key, e *exchange, edit func(*admit.Config)) (string, error) {
	t.Helper()
	var (
		key    string
		keyErr error
	)
	cfg := admit.Config{
		Limiter: limiter(t),
		Rules: []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.KeyFunc(func(dst []byte, r *admit.Request) ([]byte, error) {
			b, err := k.AppendKey(dst, r)
			key, keyErr = string(b[len(dst):]), err
			return b, err
		})}},
		OnError: func(*admit.Request, error) *admit.Response { return nil },
	}
	if edit != nil {
		edit(&cfg)
	}
	m, err := httplimit.New(cfg)
	require.NoError(t, err)
	m.Decide(e, e)
	return key, keyErr
}

func TestJoinCannotBeForged(t *testing.T) {
	e := newExchange("192.0.2.1")
	a, err := keyOf(t, admit.Join(admit.Const("ab"), admit.Const("c")), e)
	require.NoError(t, err)
	b, err := keyOf(t, admit.Join(admit.Const("a"), admit.Const("bc")), e)
	require.NoError(t, err)
	c, err := keyOf(t, admit.Join(admit.Const("2:ab1:c")), e)
	require.NoError(t, err)
	assert.Equal(t, "2:ab1:c", a)
	assert.Equal(t, "1:a2:bc", b)
	assert.Equal(t, "7:2:ab1:c", c)

	long := strings.Repeat("x", 1234)
	k, err := keyOf(t, admit.Join(admit.Const(long), admit.Const("")), e)
	require.NoError(t, err)
	assert.Equal(t, "1234:"+long+"0:", k)
}

func TestJoinErrors(t *testing.T) {
	e := newExchange("192.0.2.1")
	_, err := keyOf(t, admit.Join(admit.Const("a"), admit.Header("X-Missing")), e)
	assert.ErrorIs(t, err, admit.ErrNoKey)
	// A Join New never sees, inside a key function of the user's own, fails
	// the request rather than keying every request alike.
	for _, bad := range []admit.Key{admit.Join(), admit.Join(nil)} {
		_, err = keyOf(t, admit.KeyFunc(func(dst []byte, r *admit.Request) ([]byte, error) {
			return bad.AppendKey(dst, r)
		}), e)
		assert.Error(t, err)
	}
}

type userKey struct{}

func TestUserAndRouteKeys(t *testing.T) {
	user := admit.User(func(ctx context.Context) (string, bool) {
		u, ok := ctx.Value(userKey{}).(string)
		return u, ok
	})
	e := newExchange("192.0.2.1")
	_, err := keyOf(t, user, e)
	assert.ErrorIs(t, err, admit.ErrNoKey)
	e.ctx = context.WithValue(e.ctx, userKey{}, "ann")
	k, err := keyOf(t, user, e)
	require.NoError(t, err)
	assert.Equal(t, "ann", k)

	_, err = keyOf(t, admit.Route(), e)
	assert.ErrorIs(t, err, admit.ErrNoKey)
	e.route = "/users/:id"
	k, err = keyOf(t, admit.Route(), e)
	require.NoError(t, err)
	assert.Equal(t, "/users/:id", k)
}

func TestClientIPKeyForNonIPPeer(t *testing.T) {
	e := newExchange("192.0.2.1")
	e.peer = netip.Addr{}
	k, err := keyOf(t, admit.ClientIP(), e)
	require.NoError(t, err)
	assert.Equal(t, "unknown", k)
}

func TestKeyErrorReachesOnError(t *testing.T) {
	boom := errors.New("boom")
	var got error
	m, err := httplimit.New(admit.Config{
		Limiter: limiter(t),
		Rules: []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.Func(func(*admit.Request) (string, error) {
			return "", boom
		})}},
		OnError: func(_ *admit.Request, err error) *admit.Response {
			got = err
			return &admit.Response{Status: 400, ContentType: "text/plain", Body: []byte("no key")}
		},
	})
	require.NoError(t, err)
	e := newExchange("192.0.2.1")
	v := m.Decide(e, e)
	assert.False(t, v.Proceed)
	assert.Equal(t, 400, e.status)
	assert.Equal(t, "no key", e.body)
	assert.ErrorIs(t, got, boom)
	var ke *admit.KeyError
	require.ErrorAs(t, got, &ke)
	assert.Equal(t, "per-ip", ke.Policy)
	assert.Equal(t, `admit: key for policy "per-ip": boom`, ke.Error())
}

func TestOnErrorNilLetsThrough(t *testing.T) {
	m, err := httplimit.New(admit.Config{
		Limiter: limiter(t),
		Rules: []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.Func(func(*admit.Request) (string, error) {
			return "", errors.New("boom")
		})}},
		OnError: func(*admit.Request, error) *admit.Response { return nil },
	})
	require.NoError(t, err)
	e := newExchange("192.0.2.1")
	assert.True(t, m.Decide(e, e).Proceed)
	assert.False(t, e.written)
}

// More rules than the precomputed table covers: the policy list is built
// per request, in rule order, listing only the rules that applied.
func TestManyRules(t *testing.T) {
	var rules []admit.Rule
	for i := range 10 {
		p := core.MustPolicy(core.PolicyConfig{Name: "p" + strconv.Itoa(i), Algorithm: core.FixedWindow, Quota: int64(100 - i), Period: time.Minute})
		rules = append(rules, admit.Rule{Policy: p, Key: admit.Const("k"), Skip: func(*admit.Request) bool { return i%3 == 1 }})
	}
	m, err := httplimit.New(admit.Config{Limiter: limiter(t), Rules: rules})
	require.NoError(t, err)
	e := newExchange("192.0.2.1")
	require.True(t, m.Decide(e, e).Proceed)
	var want []string
	for i := range 10 {
		if i%3 != 1 {
			want = append(want, fmt.Sprintf(`"p%d";q=%d;w=60`, i, 100-i))
		}
	}
	assert.Equal(t, strings.Join(want, ", "), e.set["Ratelimit-Policy"])
	assert.Equal(t, `"p9";r=90;t=60`, e.set["Ratelimit"])
}

func TestSubSecondWindowRoundsUp(t *testing.T) {
	fast := core.MustPolicy(core.PolicyConfig{Name: "fast", Algorithm: core.GCRA, Quota: 100, Period: time.Second, Burst: 20})
	m, err := httplimit.New(admit.Config{Limiter: limiter(t), Rules: []admit.Rule{{Policy: fast, Key: admit.Const("k")}}})
	require.NoError(t, err)
	e := newExchange("192.0.2.1")
	m.Decide(e, e)
	assert.Equal(t, `"fast";q=20;w=1`, e.set["Ratelimit-Policy"]) // 200 ms to refill: w=1
	assert.Equal(t, `"fast";r=19;t=1`, e.set["Ratelimit"])        // 10 ms to full: t=1
}

func TestDenialWithReservation(t *testing.T) {
	one := core.MustPolicy(core.PolicyConfig{Name: "one", Algorithm: core.FixedWindow, Quota: 1, Period: time.Minute})
	m, err := httplimit.New(admit.Config{
		Limiter:   limiter(t),
		Rules:     []admit.Rule{{Policy: one, Key: admit.Const("k")}},
		Estimates: true,
	})
	require.NoError(t, err)
	e := newExchange("192.0.2.1")
	v := m.Decide(e, e)
	require.True(t, v.Proceed)
	require.NotNil(t, v.Reservation)
	e = newExchange("192.0.2.1")
	v = m.Decide(e, e)
	assert.False(t, v.Proceed)
	assert.Nil(t, v.Reservation)
	assert.Equal(t, 429, e.status)
	assert.Contains(t, e.body, `"violated-policies":["one"]`)
	assert.Equal(t, "60", e.set["Retry-After"])
}

func TestReservationContext(t *testing.T) {
	assert.Nil(t, admit.ReservationFrom(context.Background()))
	res := &core.Reservation{}
	assert.Same(t, res, admit.ReservationFrom(admit.Verdict{Reservation: res}.Context(context.Background())))
}

// A ServeMux pattern's method and host are not part of the template Routes
// entries name.
func TestRoutesMatchPatternPath(t *testing.T) {
	login := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.FixedWindow, Quota: 3, Period: time.Minute})
	for route, applies := range map[string]bool{
		"GET example.com/login": true,
		"example.com/login":     true,
		"GET  /login":           true,
		"/login":                true,
		"GET /login/":           false,
		"/log":                  false,
		"":                      false,
	} {
		m, err := httplimit.New(admit.Config{Limiter: limiter(t), Rules: []admit.Rule{
			{Policy: login, Key: admit.Const("k"), Routes: []string{"GET /login"}},
		}})
		require.NoError(t, err)
		e := newExchange("192.0.2.1")
		e.route = route
		m.Decide(e, e)
		assert.Equal(t, applies, e.set["Ratelimit-Policy"] != "", "route %q", route)
	}
}

// An unknown route fails a rule with Routes, unless the rule's Skip exempts
// the request.
func TestUnknownRoute(t *testing.T) {
	var got error
	skip := false
	m, err := httplimit.New(admit.Config{
		Limiter: limiter(t),
		Rules: []admit.Rule{{Policy: httplimittest.Login, Key: admit.Const("k"), Routes: []string{"/login"},
			Skip: func(*admit.Request) bool { return skip }}},
		OnError: func(_ *admit.Request, err error) *admit.Response { got = err; return nil },
	})
	require.NoError(t, err)
	e := newExchange("192.0.2.1")
	e.route = admit.RouteUnknown
	assert.True(t, m.Decide(e, e).Proceed)
	assert.ErrorIs(t, got, admit.ErrRouteUnknown)

	got, skip = nil, true
	assert.True(t, m.Decide(e, e).Proceed)
	assert.NoError(t, got)
}

// A denial's Retry-After is the longest wait of any that applies: one an
// earlier handler on the request's path already set stays if it is longer.
func TestRetryAfterIsTheLongest(t *testing.T) {
	one := core.MustPolicy(core.PolicyConfig{Name: "one", Algorithm: core.FixedWindow, Quota: 1, Period: time.Minute})
	m, err := httplimit.New(admit.Config{Limiter: limiter(t), Rules: []admit.Rule{{Policy: one, Key: admit.Const("k")}}})
	require.NoError(t, err)
	require.True(t, m.Decide(newExchange("192.0.2.1"), newExchange("192.0.2.1")).Proceed)
	for prev, want := range map[string]string{"3600": "3600", "5": "60", "": "60"} {
		e := newExchange("192.0.2.1")
		if prev != "" {
			e.set["Retry-After"] = prev
		}
		assert.False(t, m.Decide(e, e).Proceed)
		assert.Equal(t, want, e.set["Retry-After"], "earlier Retry-After %q", prev)
	}
}

// A nil limiter behind the Slots interface is refused when the engine is
// built, not met by the first request.
func TestNewRefusesANilSlots(t *testing.T) {
	var slots *backpressure.Limiter
	_, err := admit.New(admit.Config{Concurrency: slots})
	assert.ErrorContains(t, err, "Config.Concurrency is a nil *backpressure.Limiter")
}
