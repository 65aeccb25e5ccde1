package rulefile_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/admit/explain"
	"github.com/sluice-go/sluice/adapters/admit/explain/explainhttp"
	"github.com/sluice-go/sluice/adapters/admit/rulefile"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
)

// Through net/http's middleware: a rule file's rules apply, a new version
// swaps in behind the adapter, and an operator with the secret gets one
// request's explanation, keys hashed, while the recorder keeps it.
func TestRuleFileBehindNetHTTP(t *testing.T) {
	const secret = "operators-only-0123456789"
	rec, err := explainhttp.NewRecorder(16, []byte(secret))
	require.NoError(t, err)
	env := rulefile.Env{Store: newStore(), Base: admit.Config{Explain: explain.Options{Secret: secret, Record: rec.Record}}}
	load := func(quota string) *rulefile.File {
		f, err := rulefile.Load("rules.json", strings.NewReader(`{"policies": {"per-ip": {"quota": `+quota+`, "period": "1h"}},
		  "rules": [{"policy": "per-ip", "key": "client-ip"}]}`))
		require.NoError(t, err)
		return f
	}
	rules, err := rulefile.Compile(load("2"), env)
	require.NoError(t, err)
	mw, err := sluicehttp.New(rules.Config())
	require.NoError(t, err)
	live := rulefile.NewLive(rules, env)
	srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	defer srv.Close()
	get := func(header string) *http.Response {
		req, err := http.NewRequest("GET", srv.URL, nil)
		require.NoError(t, err)
		if header != "" {
			req.Header.Set("Sluice-Explain", header)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	assert.Equal(t, 200, get("").StatusCode)
	assert.Equal(t, 200, get("wrong-secret-0123456789").StatusCode)
	resp := get(secret)
	assert.Equal(t, 429, resp.StatusCode)
	var x explain.Explanation
	require.NoError(t, json.Unmarshal([]byte(resp.Header.Get("Sluice-Explain-Result")), &x))
	assert.Equal(t, "per-ip", x.Decider)
	assert.False(t, x.Proceed)
	assert.NotContains(t, resp.Header.Get("Sluice-Explain-Result"), "127.0.0.1")
	require.Len(t, rec.Latest(), 1, "the wrong secret explained nothing")

	require.NoError(t, live.Apply(load("3"))) // a changed policy starts afresh
	assert.Equal(t, 200, get("").StatusCode)
	assert.Equal(t, 200, get("").StatusCode)
	assert.Equal(t, 200, get("").StatusCode)
	assert.Equal(t, 429, get("").StatusCode)
}
