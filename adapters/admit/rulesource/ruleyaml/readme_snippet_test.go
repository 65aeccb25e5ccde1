package ruleyaml_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's rule file compiles.
func TestReadmeFile(t *testing.T) {
	require.NoError(t, compile(t, `trusted_proxies: [10.0.0.0/8]
policies:
  per-ip:  {quota: 100, period: 1m, burst: 20}
  login:   {algorithm: token-bucket, quota: 5, period: 5m}
  search:  {quota: 10, period: 1s, mode: "10%"}   # enforced for 10% of API keys
rules:
  - {policy: per-ip, key: client-ip}
  - {policy: login, key: client-ip, routes: ["POST /login"], charge: [4xx, 5xx]}
  - {policy: search, key: {header: X-API-Key}, routes: ["GET /search"]}
failure: {mode: closed, retry_after: 2s}
`))
	_ = strings.TrimSpace
}
