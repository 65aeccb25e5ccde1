package ruleyaml_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit/rulefile"
	"github.com/sluice-go/sluice/adapters/admit/rulesource/ruleyaml"
	"github.com/sluice-go/sluice/store/memory"
)

// Common is the README's rule file.
const Common = `# rules.yaml: the limits of the API, reloaded while it runs.
version: "2026-12-01"
trusted_proxies: [10.0.0.0/8]          # the load balancers
policies:
  per-ip:   {quota: 100, period: 1m, burst: 20}
  login:    {algorithm: token-bucket, quota: 5, period: 5m}
  free:     {quota: 60, period: 1m}
  pro:      {quota: 600, period: 1m}
  search:   {quota: 10, period: 1s, mode: "10%"}    # enforced for 10% of keys
  uploads:  {algorithm: sliding-counter, quota: 50, period: 1h, mode: shadow}
rules:
  - {policy: per-ip, key: client-ip}
  - policy: login
    key: client-ip
    routes: ["POST /login"]
    charge: [4xx, 5xx]                  # only failed logins count
  - key: {header: X-API-Key}
    tiers:
      by: {user: plan}                  # a hook registered in Go
      policies: {free: free, pro: pro}
      default: free
  - {policy: search, key: {header: X-API-Key}, routes: ["GET /search"]}
  - {policy: uploads, key: {user: session}, routes: ["/upload"], cost: 5}
failure: {mode: closed, retry_after: 2s}
`

func hooks() rulefile.Hooks {
	none := func(context.Context) (string, bool) { return "", false }
	return rulefile.Hooks{Users: map[string]func(context.Context) (string, bool){"plan": none, "session": none}}
}

func compile(t *testing.T, src string) error {
	f, err := ruleyaml.Load("rules.yaml", strings.NewReader(src))
	if err != nil {
		return err
	}
	s, err := memory.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = rulefile.Compile(f, rulefile.Env{Store: s, Hooks: hooks()})
	return err
}

func TestCommonFile(t *testing.T) {
	require.NoError(t, compile(t, Common))
	f, err := ruleyaml.Load("rules.yaml", strings.NewReader(Common))
	require.NoError(t, err)
	j, err := rulefile.Load("rules.json", strings.NewReader(`{"version": "2026-12-01", "trusted_proxies": ["10.0.0.0/8"],
	"policies": {"per-ip": {"quota": 100, "period": "1m", "burst": 20}, "login": {"algorithm": "token-bucket", "quota": 5, "period": "5m"},
	  "free": {"quota": 60, "period": "1m"}, "pro": {"quota": 600, "period": "1m"}, "search": {"quota": 10, "period": "1s", "mode": "10%"},
	  "uploads": {"algorithm": "sliding-counter", "quota": 50, "period": "1h", "mode": "shadow"}},
	"rules": [{"policy": "per-ip", "key": "client-ip"}, {"policy": "login", "key": "client-ip", "routes": ["POST /login"], "charge": ["4xx", "5xx"]},
	  {"key": {"header": "X-API-Key"}, "tiers": {"by": {"user": "plan"}, "policies": {"free": "free", "pro": "pro"}, "default": "free"}},
	  {"policy": "search", "key": {"header": "X-API-Key"}, "routes": ["GET /search"]},
	  {"policy": "uploads", "key": {"user": "session"}, "routes": ["/upload"], "cost": 5}],
	"failure": {"mode": "closed", "retry_after": "2s"}}`))
	require.NoError(t, err)
	assert.Equal(t, j.Version(), f.Version(), "the same rules in YAML and JSON are the same version")
}

func TestErrorsNameFileLineField(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"range", "policies:\n  a:\n    quota: 0\n    period: 1s\nrules: [{policy: a, key: route}]\n", "rules.yaml:3:12: policies.a.quota must be a whole number from 1"},
		{"core's bound", "policies:\n  a: {quota: 5, period: 1s, burst: 2000000000000}\nrules: [{policy: a, key: route}]\n", "rules.yaml:2:36: policies.a.burst must be at most"},
		{"unknown", "policies:\n  a: {quota: 5, period: 1s, limit: 0}\n", "rules.yaml:2:29: policies.a.limit is not a field here"},
		{"unknown policy", "rules:\n  - policy: nope\n    key: route\n", "rules.yaml:2:13: rules[0].policy names policy \"nope\""},
		{"syntax", "rules: [\n", "rules.yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := compile(t, tc.src)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			var fe *rulefile.Error
			assert.True(t, errors.As(err, &fe), "%T %v", err, err)
		})
	}
}

func TestHostileFilesRefused(t *testing.T) {
	var block strings.Builder
	for i := range 200 {
		block.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	for _, tc := range []struct{ name, src, want string }{
		{"deep flow", strings.Repeat("[", 400_000) + strings.Repeat("]", 400_000), "nested deeper than 32"},
		{"deep block", block.String(), "nested deeper than 32"},
		{"deep sequences", strings.Repeat("- ", 100) + "x\n", "nested deeper than 32"},
		{"huge number", "policies:\n  a: {quota: 1e400, period: 1s}\n", "policies.a.quota must be a whole number"},
		{"long number", "policies:\n  a: {quota: 99999999999999999999999, period: 1s}\n", "policies.a.quota must be a whole number"},
		{"infinity", "policies:\n  a: {quota: .inf, period: 1s}\n", "policies.a.quota must be a whole number"},
		{"alias", "policies:\n  a: &p {quota: 1, period: 1s}\n  b: *p\n", "anchors, aliases"},
		{"merge", "policies:\n  a: {quota: 1, period: 1s}\n  b: {<<: {quota: 1}, period: 1s}\n", "rules.yaml:3"},
		{"tag", "policies:\n  a: !!map {quota: 1, period: 1s}\n", "tags are not supported"},
		{"unknown field", "policies:\n  a: {quota: 1, period: 1s, unlimited: true}\n", "policies.a.unlimited is not a field here"},
		{"duplicate", "policies:\n  a: {quota: 1, quota: 1000000, period: 1s}\n", "rules.yaml:2"},
		{"two documents", "rules: []\n---\nrules: []\n", "more than one document"},
		{"too large", "version: " + strings.Repeat("x", ruleyaml.MaxSize), "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = compile(t, tc.src) })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(Common)
	f.Add("a: [1, {b: c}]\n- x\n")
	f.Fuzz(func(t *testing.T, src string) {
		_, err := ruleyaml.Load("f.yaml", strings.NewReader(src))
		if err != nil {
			var fe *rulefile.Error
			if !errors.As(err, &fe) {
				t.Fatalf("%T: %v", err, err)
			}
		}
	})
}
