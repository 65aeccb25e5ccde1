package httplimit_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/core"
)

func TestStatusRecorder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler func(w http.ResponseWriter)
		want    int
	}{
		{"nothing written", func(http.ResponseWriter) {}, 200},
		{"body alone", func(w http.ResponseWriter) { _, _ = io.WriteString(w, "ok") }, 200},
		{"status", func(w http.ResponseWriter) { w.WriteHeader(401) }, 401},
		{"informational first", func(w http.ResponseWriter) { w.WriteHeader(103); w.WriteHeader(404) }, 404},
		{"a second status is superfluous", func(w http.ResponseWriter) { w.WriteHeader(401); w.WriteHeader(200) }, 401},
		{"body, then a status", func(w http.ResponseWriter) { _, _ = io.WriteString(w, "ok"); w.WriteHeader(500) }, 200},
		{"copied body", func(w http.ResponseWriter) { _, _ = io.Copy(w, strings.NewReader("ok")) }, 200},
		{"flushed", func(w http.ResponseWriter) { w.(http.Flusher).Flush() }, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			under := httptest.NewRecorder()
			w := &httplimit.StatusRecorder{ResponseWriter: under}
			tc.handler(w)
			assert.Equal(t, tc.want, w.Status())
			if !strings.HasPrefix(tc.name, "informational") { // httptest records a 1xx as the Code
				assert.Equal(t, tc.want, under.Code, "what the writer beneath got")
			}
		})
	}

	under := httptest.NewRecorder()
	w := &httplimit.StatusRecorder{ResponseWriter: under}
	assert.Same(t, under, w.Unwrap())
	require.NoError(t, http.NewResponseController(w).Flush())
	assert.True(t, under.Flushed)
	_, _, err := w.Hijack()
	assert.ErrorIs(t, err, http.ErrNotSupported, "the recorder beneath cannot be hijacked")
	assert.Equal(t, 200, w.Status(), "nor the status taken for a hijack")
}

// A handler that takes the connection over (a WebSocket upgrade) answers
// 101 Switching Protocols itself.
func TestStatusRecorderHijack(t *testing.T) {
	status := make(chan int, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &httplimit.StatusRecorder{ResponseWriter: w}
		conn, rw, err := http.NewResponseController(rec).Hijack()
		if err != nil {
			status <- -1
			return
		}
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
		_ = rw.Flush()
		_ = conn.Close()
		status <- rec.Status()
	}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "test")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	assert.Equal(t, http.StatusSwitchingProtocols, <-status)
}

func TestVerdictContext(t *testing.T) {
	assert.Nil(t, admit.ReservationFrom(context.Background()))
	res := &core.Reservation{}
	assert.Same(t, res, admit.ReservationFrom(admit.Verdict{Reservation: res}.Context(context.Background())))
}
