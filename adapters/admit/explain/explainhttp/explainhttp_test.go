package explainhttp_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit/explain"
	"github.com/sluice-go/sluice/adapters/admit/explain/explainhttp"
)

func TestRecorderServesLatestWithoutKeys(t *testing.T) {
	rec, err := explainhttp.NewRecorder(2, []byte("0123456789abcdef"))
	require.NoError(t, err)
	for i, d := range []string{"a", "b", "c"} {
		x := &explain.Explanation{Proceed: i != 1, Decider: d, Rules: []explain.Rule{{Policy: d, Key: "192.0.2.1", Applied: true}}}
		rec.Record(x)
		assert.Equal(t, "192.0.2.1", x.Rules[0].Key, "the caller's copy keeps its key")
	}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	get := func(q string) []explain.Explanation {
		resp, err := http.Get(srv.URL + q)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out []explain.Explanation
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out
	}
	all := get("")
	require.Len(t, all, 2, "the latest two")
	assert.Equal(t, "c", all[0].Decider)
	assert.Equal(t, "b", all[1].Decider)
	assert.Empty(t, all[0].Rules[0].Key)
	assert.Len(t, all[0].Rules[0].KeyHash, 32)
	assert.Equal(t, all[0].Rules[0].KeyHash, all[1].Rules[0].KeyHash, "one key, one digest: requests can be matched")
	assert.Len(t, get("?denied=1"), 1)
	assert.Len(t, get("?decider=c"), 1)

	resp, err := http.Post(srv.URL, "text/plain", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	_, err = explainhttp.NewRecorder(10, []byte("short"))
	assert.Error(t, err)
}
