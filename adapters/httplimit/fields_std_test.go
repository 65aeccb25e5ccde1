package httplimit

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// TestAllowedFieldsAnyLength holds the allowed path's fields, written
// straight into a slab's value where they fit, to those of the general
// path where they do not: a name of any length, alone or after an earlier
// middleware's fields.
func TestAllowedFieldsAnyLength(t *testing.T) {
	for _, name := range []string{"a", "per-ip", strings.Repeat("n", 20), strings.Repeat("long", 16)} {
		p := core.MustPolicy(core.PolicyConfig{Name: name, Algorithm: core.GCRA, Quota: 1_000_000, Period: time.Hour, Burst: 1_000_000})
		st, err := memory.New()
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		l, err := core.NewLimiter(st)
		require.NoError(t, err)
		m, err := New(admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: p, Key: admit.ClientIP()}}})
		require.NoError(t, err)
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		for i := range 3 {
			w := httptest.NewRecorder()
			_, v := m.DecideHTTP(w, req, "/", nil)
			require.True(t, v.Proceed)
			assert.Equal(t, []string{`"` + name + `";r=` + itoa(999_999-i) + ";t=1"}, w.Header().Values("RateLimit"), name)
			assert.Equal(t, []string{`"` + name + `";q=1000000;w=3600`}, w.Header().Values("RateLimit-Policy"), name)
		}
		w := httptest.NewRecorder()
		w.Header().Set("RateLimit", `"earlier";r=1;t=2`)
		w.Header().Set("RateLimit-Policy", `"earlier";q=3;w=4`)
		_, v := m.DecideHTTP(w, req, "/", nil)
		require.True(t, v.Proceed)
		assert.Equal(t, `"earlier";r=1;t=2, "`+name+`";r=999996;t=1`, w.Header().Get("RateLimit"))
		assert.Equal(t, `"earlier";q=3;w=4, "`+name+`";q=1000000;w=3600`, w.Header().Get("RateLimit-Policy"))
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestFieldValuesStayPut holds the exchange's carving of field values to
// what a response needs: every value it set still reads as it did, however
// many were carved after it, of whatever lengths, through the same
// exchange, and a value a handler appends to is its own.
func TestFieldValuesStayPut(t *testing.T) {
	var x exchange
	var kept []http.Header
	var want []string
	buf := make([]byte, 0, 256)
	for i := range 3000 {
		buf = buf[:0]
		for j := range i % (maxCarved + 40) { // some longer than a slab carves
			buf = append(buf, byte('a'+(i+j)%26))
		}
		h := http.Header{}
		x.w, x.h = &nopWriter{h: h}, nil
		x.SetHeaderBytes("Ratelimit", buf)
		kept, want = append(kept, h), append(want, string(buf))
		clear(buf[:cap(buf)]) // the caller's buffer is reused
	}
	for i, h := range kept {
		if got := h["Ratelimit"]; len(got) != 1 || got[0] != want[i] {
			t.Fatalf("value %d reads %q, want %q", i, got, want[i])
		}
	}
	kept[0].Add("Ratelimit", "more")
	if got := kept[1]["Ratelimit"]; len(got) != 1 || got[0] != want[1] {
		t.Fatalf("appending to one response's field changed the next: %q", got)
	}
}
