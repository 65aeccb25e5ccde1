package sluicegrpc_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/grpc/sluicegrpc"
	"github.com/sluice-go/sluice/core"
)

// keyRecorder is an Observer that records the keys decided.
type keyRecorder struct{ keys chan string }

func (k keyRecorder) observe(_ context.Context, ev core.Event) {
	if ev.Kind == core.Allowed || ev.Kind == core.Denied {
		k.keys <- ev.Decision.Policy.Name() + "=" + ev.Key
	}
}

// keyed returns interceptors with one rule of key, and the channel the
// keys decided go to.
func keyed(t *testing.T, cfg admit.Config, key admit.Key) (*sluicegrpc.Interceptors, chan string) {
	_, limiter := newLimiter(t)
	rec := keyRecorder{make(chan string, 64)}
	cfg.Limiter = limiter
	cfg.Observer = rec.observe
	cfg.Rules = []admit.Rule{{Policy: core.MustPolicy(core.PolicyConfig{Name: "k", Algorithm: core.GCRA, Quota: 100, Period: time.Second, Burst: 100}), Key: key}}
	in, err := sluicegrpc.New(sluicegrpc.Config{Calls: cfg})
	require.NoError(t, err)
	return in, rec.keys
}

func nextKey(t *testing.T, keys chan string) string {
	t.Helper()
	select {
	case k := <-keys:
		return k
	case <-time.After(10 * time.Second):
		t.Fatal("no decision")
		return ""
	}
}

// The client's address is the peer's; a forwarded address is believed
// only from a trusted peer, and only as far as the trusted hops go.
func TestPeerKeys(t *testing.T) {
	in, keys := keyed(t, admit.Config{TrustedProxies: []string{"127.0.0.9"}}, admit.ClientIP())
	addr := serve(t, in, nil)

	untrusted := dial(t, addr, "127.0.0.2")
	unary(t, untrusted, emptyCall, codes.OK, "x-forwarded-for", "203.0.113.7")
	assert.Equal(t, "k=127.0.0.2", nextKey(t, keys), "a spoofed forwarded address from an untrusted peer changes nothing")
	unary(t, untrusted, emptyCall, codes.OK, "X-Forwarded-For", "203.0.113.7", "x-real-ip", "203.0.113.8", "forwarded", "for=203.0.113.9")
	assert.Equal(t, "k=127.0.0.2", nextKey(t, keys))

	proxy := dial(t, addr, "127.0.0.9")
	unary(t, proxy, emptyCall, codes.OK, "x-forwarded-for", "203.0.113.7")
	assert.Equal(t, "k=203.0.113.7", nextKey(t, keys), "a trusted proxy's forwarded address")
	unary(t, proxy, emptyCall, codes.OK, "x-forwarded-for", "198.51.100.1, 203.0.113.7")
	assert.Equal(t, "k=203.0.113.7", nextKey(t, keys), "the client's own prefix is not read past an untrusted hop")
	unary(t, proxy, emptyCall, codes.OK, "x-forwarded-for", "garbage")
	assert.Equal(t, "k=127.0.0.9", nextKey(t, keys), "a malformed hop stops the walk at the proxy")
	unary(t, proxy, emptyCall, codes.OK)
	assert.Equal(t, "k=127.0.0.9", nextKey(t, keys))
}

// Keys from metadata: an API key, the first of its values; the full
// method; a user an authentication interceptor put in the context.
func TestMetadataKeys(t *testing.T) {
	in, keys := keyed(t, admit.Config{}, admit.Join(admit.Header("X-API-Key"), admit.Route()))
	addr := serve(t, in, nil)
	c := dial(t, addr, "")
	unary(t, c, emptyCall, codes.OK, "x-api-key", "key-1")
	assert.Equal(t, "k=5:key-1"+strconv.Itoa(len(emptyCall))+":"+emptyCall, nextKey(t, keys))
	unary(t, c, unaryCall, codes.OK, "x-api-key", "key-2", "x-api-key", "key-1")
	assert.Equal(t, "k=5:key-2"+strconv.Itoa(len(unaryCall))+":"+unaryCall, nextKey(t, keys))
	unary(t, c, unaryCall, codes.OK) // no API key: the rule does not apply
	unary(t, c, unaryCall, codes.OK, "x-api-key", "key-3")
	assert.Equal(t, "k=5:key-3"+strconv.Itoa(len(unaryCall))+":"+unaryCall, nextKey(t, keys), "the call without a key was not decided")
	unary(t, c, unaryCall, codes.OK, "x-api-key-bin", "key-4")
	unary(t, c, unaryCall, codes.OK, "x-api-key", "key-5")
	assert.Equal(t, "k=5:key-5"+strconv.Itoa(len(unaryCall))+":"+unaryCall, nextKey(t, keys), "a binary key is no API key")
}

// Hostile metadata never lifts a limit: a client that sends the fields,
// a push-back or a forged tier, many values or a huge key, is limited by
// its own key all the same.
func TestHostileMetadata(t *testing.T) {
	_, limiter := newLimiter(t)
	free := core.MustPolicy(core.PolicyConfig{Name: "free", Algorithm: core.GCRA, Quota: 2, Period: 2 * time.Second, Burst: 2})
	pro := core.MustPolicy(core.PolicyConfig{Name: "pro", Algorithm: core.GCRA, Quota: 100, Period: 2 * time.Second, Burst: 100})
	plans := map[string]*core.Policy{"secret-pro-key": pro}
	in, err := sluicegrpc.New(sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: []admit.Rule{{
		Policies: []*core.Policy{free, pro},
		Select: func(r *admit.Request) (*core.Policy, error) {
			if p, ok := plans[r.Header("X-API-Key")]; ok {
				return p, nil
			}
			return free, nil
		},
		Key: admit.Header("X-API-Key"),
	}, {
		Policy: perPeer(), Key: admit.ClientIP(), Routes: []string{unaryCall},
	}}}})
	require.NoError(t, err)
	c := dial(t, serve(t, in, nil), "")
	hostile := []string{
		"x-api-key", "forged",
		"x-plan", "pro", "ratelimit", `"free";r=100;t=0`, "ratelimit-policy", `"free";q=1000;w=1`,
		"grpc-retry-pushback-ms", "0", "retry-after", "0", "x-forwarded-for", "10.0.0.1",
	}
	for range 2 {
		assert.Equal(t, codes.OK, unary(t, c, emptyCall, codes.OK, hostile...).Code)
	}
	a := unary(t, c, emptyCall, codes.OK, hostile...)
	assert.Equal(t, codes.ResourceExhausted, a.Code)
	assert.Equal(t, `"free";r=0;t=1`, a.get("ratelimit"))

	huge := strings.Repeat("k", 8<<10)
	for range 2 {
		assert.Equal(t, codes.OK, unary(t, c, emptyCall, codes.OK, "x-api-key", huge).Code)
	}
	assert.Equal(t, codes.ResourceExhausted, unary(t, c, emptyCall, codes.OK, "x-api-key", huge).Code, "a huge key is a key like any")

	// Many values: the first is the key; the others change nothing.
	assert.Equal(t, codes.ResourceExhausted, unary(t, c, emptyCall, codes.OK, "x-api-key", "forged", "x-api-key", "secret-pro-key").Code)
	assert.Equal(t, `"pro";r=99;t=1`, unary(t, c, emptyCall, codes.OK, "x-api-key", "secret-pro-key", "x-api-key", "forged").get("ratelimit"))
}

// Rules with Routes apply to the methods they list, a full method or a
// whole service.
func TestMethodPatterns(t *testing.T) {
	_, limiter := newLimiter(t)
	one := func(name string) *core.Policy {
		return core.MustPolicy(core.PolicyConfig{Name: name, Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 1})
	}
	in, err := sluicegrpc.New(sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: []admit.Rule{
		{Policy: one("unary"), Key: admit.Const("x"), Routes: []string{unaryCall}},
		{Policy: one("other-service"), Key: admit.Const("x"), Routes: []string{"/other.Service/*"}},
	}}})
	require.NoError(t, err)
	c := dial(t, serve(t, in, nil), "")
	for range 3 {
		a := unary(t, c, emptyCall, codes.OK)
		assert.Equal(t, codes.OK, a.Code)
		assert.Empty(t, a.Header.Get("ratelimit"), "no rule applies")
	}
	assert.Equal(t, `"unary";r=0;t=1`, unary(t, c, unaryCall, codes.OK).get("ratelimit"))
	assert.Equal(t, codes.ResourceExhausted, unary(t, c, unaryCall, codes.OK).Code)

	_, limiter = newLimiter(t)
	in, err = sluicegrpc.New(sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: []admit.Rule{
		{Policy: one("service"), Key: admit.Const("x"), Routes: []string{"/grpc.testing.TestService/*"}},
	}}})
	require.NoError(t, err)
	c = dial(t, serve(t, in, nil), "")
	assert.Equal(t, codes.OK, unary(t, c, emptyCall, codes.OK).Code)
	assert.Equal(t, codes.ResourceExhausted, unary(t, c, unaryCall, codes.OK).Code, "the service's methods share the allowance")
}

// A bad Config is an error at New that names the field.
func TestConfigErrors(t *testing.T) {
	_, limiter := newLimiter(t)
	p := perPeer()
	rule := func(routes ...string) []admit.Rule {
		return []admit.Rule{{Policy: p, Key: admit.ClientIP(), Routes: routes}}
	}
	cases := []struct {
		cfg  sluicegrpc.Config
		want string
	}{
		{sluicegrpc.Config{}, "Calls: admit: Config.Limiter is nil"},
		{sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: rule("GET /x")}}, `Calls.Rules[0].Routes: method "GET /x"`},
		{sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: rule("/pkg.S")}}, `method "/pkg.S"`},
		{sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: rule("/pkg.S/*", "/pkg.S/*")}}, "listed twice"},
		{sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: rule("/pkg.*/M")}}, `"*" stands only`},
		{sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: rule("/pkg.S/M*")}}, `"*" stands only`},
		{sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: rule("/pkg.S/a b")}}, "a space"},
		{sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: rule()}, Received: &admit.Config{}}, "Received: admit: Config.Limiter is nil"},
		{sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: rule()}, Sent: &admit.Config{Limiter: limiter, Rules: rule(), Estimates: true}}, "Sent.Estimates"},
		{sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: rule()}, Received: &admit.Config{Limiter: limiter,
			Rules: []admit.Rule{{Policy: p, Key: admit.ClientIP(), Charge: func(int) bool { return true }}}}}, "Received.Rules[0].Charge"},
		{sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: rule(), Dependencies: []admit.Dependency{{Name: "d", Routes: []string{"/pkg.S/*"}}}}}, "Calls.Dependencies[0].Routes"},
	}
	for _, c := range cases {
		_, err := sluicegrpc.New(c.cfg)
		if assert.Error(t, err, c.want) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
	_, err := sluicegrpc.New(sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: rule("/pkg.S/*", "/pkg.S/M", "/other.T/M")}})
	assert.NoError(t, err)
	assert.False(t, errors.Is(err, context.Canceled))
}
