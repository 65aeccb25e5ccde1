package httplimit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// TestKeyStringsStayPut holds keyString's carving to what a kept key needs:
// every key it returned still reads as it did, however many were carved
// after it, of whatever lengths, through the same Request.
func TestKeyStringsStayPut(t *testing.T) {
	var r Request
	var kept, want []string
	buf := make([]byte, 0, 128)
	for i := range 2000 {
		buf = buf[:0]
		for j := range i % (maxCarved + 10) { // some longer than a slab carves
			buf = append(buf, byte('a'+(i+j)%26))
		}
		want = append(want, string(buf))
		kept = append(kept, r.keyString(buf))
		clear(buf[:cap(buf)]) // the caller's buffer is reused
	}
	for i := range kept {
		if kept[i] != want[i] {
			t.Fatalf("key %d reads %q, want %q", i, kept[i], want[i])
		}
	}
	r.clientText = "192.0.2.1"
	if s := r.keyString([]byte("192.0.2.1")); unsafe.StringData(s) != unsafe.StringData(r.clientText) {
		t.Error("a key equal to the client's text is not that text")
	}
}

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
		m, err := New(Config{Limiter: l, Rules: []Rule{{Policy: p, Key: ClientIP()}}})
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

func itoa(n int) string { return string(appendInt(nil, int64(n))) }
