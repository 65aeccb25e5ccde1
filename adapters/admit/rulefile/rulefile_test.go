package rulefile_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/admit/rulefile"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

const common = `{
  "version": "2026-12-01",
  "trusted_proxies": ["10.0.0.0/8"],
  "policies": {
    "per-ip":  {"quota": 100, "period": "1m", "burst": 20},
    "login":   {"algorithm": "token-bucket", "quota": 5, "period": "5m"},
    "free":    {"quota": 60, "period": "1m"},
    "pro":     {"quota": 600, "period": "1m", "mode": "10%"},
    "uploads": {"algorithm": "sliding-counter", "quota": 50, "period": "1h", "mode": "shadow"}
  },
  "rules": [
    {"policy": "per-ip", "key": "client-ip"},
    {"policy": "login", "key": {"by": "client-ip", "except": ["192.0.2.7"]}, "routes": ["POST /login"], "charge": ["4xx", "5xx"]},
    {"tiers": {"by": {"header": "X-Plan"}, "policies": {"free": "free"}, "default": "free"}, "key": {"header": "X-API-Key"}},
    {"tiers": {"by": {"header": "X-Plan"}, "policies": {"pro": "pro"}}, "key": {"join": [{"header": "X-API-Key"}, "method"]}},
    {"policy": "uploads", "key": {"user": "session"}, "routes": ["/upload"], "cost": 5}
  ],
  "failure": {"mode": "closed", "retry_after": "2s"}
}`

func hooks() rulefile.Hooks {
	return rulefile.Hooks{Users: map[string]func(ctx context.Context) (string, bool){
		"session": func(ctx context.Context) (string, bool) { return "", false },
	}}
}

func TestCommonFileCompiles(t *testing.T) {
	f, err := rulefile.Load("rules.json", strings.NewReader(common))
	require.NoError(t, err)
	r, err := rulefile.Compile(f, rulefile.Env{Store: newStore(), Hooks: hooks()})
	require.NoError(t, err)
	cfg := r.Config()
	require.Len(t, cfg.Rules, 5)
	assert.Equal(t, "per-ip: gcra 100/1m0s burst 20", cfg.Rules[0].Policy.String())
	assert.Equal(t, 0.9, cfg.Rules[3].Shadow)
	assert.Equal(t, 1.0, cfg.Rules[4].Shadow)
	assert.True(t, cfg.Rules[1].Charge(404))
	assert.False(t, cfg.Rules[1].Charge(200))
	assert.Equal(t, []string{"10.0.0.0/8"}, cfg.TrustedProxies)
	assert.True(t, strings.HasPrefix(f.Version(), "2026-12-01-"))
	_, err = admit.New(cfg)
	require.NoError(t, err)
}

// Every error names the file, the line and the field.
func TestErrorsNameFileLineField(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"quota out of range", `{"policies": {"a": {"quota": 0, "period": "1m"}}, "rules": [{"policy": "a", "key": "client-ip"}]}`,
			"rules.json:1:30: policies.a.quota must be a whole number from 1"},
		{"quota past core's bound", "{\"policies\": {\"a\": {\n  \"quota\": 2000000000000, \"period\": \"1m\"}},\n \"rules\": [{\"policy\": \"a\", \"key\": \"client-ip\"}]}",
			"rules.json:2:12: policies.a.quota must be at most"},
		{"unknown field", "{\"policies\": {},\n \"rulez\": []}", "rules.json:2:2: rulez is not a field here"},
		{"unknown policy", "{\"rules\": [\n {\"policy\": \"nope\", \"key\": \"client-ip\"}]}", "rules.json:2:13: rules[0].policy names policy \"nope\""},
		{"bad period", `{"policies": {"a": {"quota": 1, "period": "forever"}}}`, "rules.json:1:43: policies.a.period must be a positive duration"},
		{"bad key", "{\"policies\": {\"a\": {\"quota\": 1, \"period\": \"1s\"}},\n \"rules\": [{\"policy\": \"a\", \"key\": {\"cookie\": \"x\"}}]}",
			"rules.json:2:36: rules[0].key.cookie is not a field here"},
		{"bad route", "{\"policies\": {\"a\": {\"quota\": 1, \"period\": \"1s\"}},\n \"rules\": [{\"policy\": \"a\", \"key\": \"route\", \"routes\": [\"login\"]}]}",
			"rules.json:2:12: rules[0] admit: rule 0 (a): route \"login\""},
		{"missing hook", `{"policies": {"a": {"quota": 1, "period": "1s"}}, "rules": [{"policy": "a", "key": {"hook": "tenant"}}]}`,
			"rules.json:1:84: rules[0].key.hook names \"tenant\", which Hooks.Keys lacks"},
		{"syntax", "{\n \"rules\": [,]}", "rules.json:2:12: JSON: invalid character ','"},
		{"mode", `{"policies": {"a": {"quota": 1, "period": "1s", "mode": "110%"}}}`, "policies.a.mode must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := compile(tc.src)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			var fe *rulefile.Error
			assert.True(t, errors.As(err, &fe), "%T", err)
		})
	}
}

func compile(src string) error {
	f, err := rulefile.Load("rules.json", strings.NewReader(src))
	if err != nil {
		return err
	}
	_, err = rulefile.Compile(f, rulefile.Env{Store: newStore(), Hooks: hooks()})
	return err
}

// A hostile file is refused with an error: never a panic, a limit turned
// off, or a number rounded.
func TestHostileFilesRefused(t *testing.T) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	for _, tc := range []struct{ name, src, want string }{
		{"deep nesting", deep, "nested deeper than 32"},
		{"deep map", strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000), "nested deeper than 32"},
		{"huge number", `{"policies": {"a": {"quota": 1e400, "period": "1s"}}}`, "policies.a.quota must be a whole number"},
		{"long number", `{"policies": {"a": {"quota": 99999999999999999999999999, "period": "1s"}}}`, "policies.a.quota must be a whole number"},
		{"fraction", `{"policies": {"a": {"quota": 1.5, "period": "1s"}}}`, "policies.a.quota must be a whole number"},
		{"negative burst", `{"policies": {"a": {"quota": 1, "burst": -1, "period": "1s"}}}`, "policies.a.burst must be a whole number"},
		{"huge period", `{"policies": {"a": {"quota": 1, "period": "9999999999h"}}}`, "policies.a.period must be a positive duration"},
		{"unknown field", `{"policies": {"a": {"quota": 1, "period": "1s", "unlimited": true}}}`, "policies.a.unlimited is not a field here"},
		{"duplicate key", `{"policies": {"a": {"quota": 1, "quota": 1000000, "period": "1s"}}}`, "quota is set twice"},
		{"too large", `{"version": "` + strings.Repeat("x", rulefile.MaxSize) + `"}`, "larger than"},
		{"two values", `{} {}`, "more than one value"},
		{"shadow everything by a policy named nowhere", `{"policies": {"a": {"quota": 1, "period": "1s"}}}`, "policies.a is named by no rule"},
		{"zero cost", `{"policies": {"a": {"quota": 1, "period": "1s"}}, "rules": [{"policy": "a", "key": "route", "cost": 0}]}`, "rules[0].cost must be a whole number from 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = compile(tc.src) })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// Next reuses the very policy of a definition that did not change.
func TestNextReusesUnchangedPolicies(t *testing.T) {
	f1, err := rulefile.Load("a.json", strings.NewReader(`{"policies": {"a": {"quota": 10, "period": "1s"}, "b": {"quota": 5, "period": "1s"}},
	  "rules": [{"policy": "a", "key": "client-ip"}, {"policy": "b", "key": "route"}]}`))
	require.NoError(t, err)
	env := rulefile.Env{Store: newStore()}
	r1, err := rulefile.Compile(f1, env)
	require.NoError(t, err)
	f2, err := rulefile.Load("a.json", strings.NewReader(`{"policies": {"a": {"quota": 10, "period": "1s", "mode": "shadow"}, "b": {"quota": 6, "period": "1s"}},
	  "rules": [{"policy": "a", "key": "client-ip"}, {"policy": "b", "key": "route"}]}`))
	require.NoError(t, err)
	r2, err := r1.Next(f2, env)
	require.NoError(t, err)
	assert.Same(t, r1.Policy("a"), r2.Policy("a"), "unchanged definition: the same policy, whatever its mode")
	assert.NotSame(t, r1.Policy("b"), r2.Policy("b"))
	assert.Same(t, r1.Config().Limiter, r2.Config().Limiter)
	assert.NotEqual(t, f1.Version(), f2.Version())

	f3, err := rulefile.Load("a.json", strings.NewReader(`{"headers": "draft", "policies": {"a": {"quota": 10, "period": "1s"}}, "rules": [{"policy": "a", "key": "client-ip"}]}`))
	require.NoError(t, err)
	_, err = r1.Next(f3, env)
	assert.ErrorContains(t, err, "headers changed")
	_ = core.GCRA
}

func newStore() core.Store {
	s, err := memory.New()
	if err != nil {
		panic(err)
	}
	return s
}
