package httplimit

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/sluice-go/sluice/adapters/admit"
)

// Middleware is an admit.Engine that answers in HTTP: denials with a
// status, Retry-After and an RFC 9457 problem body by default, and the
// rate-limit header fields on every response. It is safe for concurrent
// use.
type Middleware struct {
	*admit.Engine
	exchanges sync.Pool // *exchange
}

// New validates cfg and builds the Middleware it describes, which an adapter
// drives with Decide, or DecideHTTP for a framework built on net/http's
// types. A nil cfg.Deny or cfg.OnError answers with problem bodies.
func New(cfg admit.Config) (*Middleware, error) {
	if cfg.Deny == nil {
		cfg.Deny = problemDeny
	}
	if cfg.OnError == nil {
		cfg.OnError = internalError
	}
	e, err := admit.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Middleware{Engine: e}, nil
}

// StatusRecorder is an http.ResponseWriter that records the status the
// handler answers with, for an admit.Settlement, where the framework keeps
// no record of it (net/http itself). Wrap the writer only when the Verdict
// has a Settlement. It passes Flush, Hijack and ReadFrom on, and Unwrap
// gives http.ResponseController the writer beneath.
type StatusRecorder struct {
	http.ResponseWriter
	// Settlement, if set, has its rate-limit fields set again for the status
	// (SetFields) just before the header is written.
	Settlement *admit.Settlement
	status     int
}

// Status returns the status the response was written with: 200 if the
// handler wrote none, as net/http then answers, and 101 (Switching
// Protocols) once the handler has hijacked the connection.
func (w *StatusRecorder) Status() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// WriteHeader records the first final status (informational 1xx statuses
// other than 101 precede it) and writes it.
func (w *StatusRecorder) WriteHeader(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
		if w.Settlement != nil {
			SetFields(w.Settlement, code, w.Header())
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write writes a body, with the 200 status net/http sends if none was.
func (w *StatusRecorder) Write(b []byte) (int, error) {
	w.wrote()
	return w.ResponseWriter.Write(b)
}

// ReadFrom copies r into the response through the writer beneath, which may
// do it without a buffer (sendfile).
func (w *StatusRecorder) ReadFrom(r io.Reader) (int64, error) {
	w.wrote()
	return io.Copy(w.ResponseWriter, r)
}

// Flush sends what is buffered, if the writer beneath can.
func (w *StatusRecorder) Flush() {
	w.wrote()
	_ = http.NewResponseController(w.ResponseWriter).Flush() // http.Flusher has no error to report it with
}

// Hijack takes the connection over, if the writer beneath can.
func (w *StatusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

// Unwrap returns the writer beneath, for http.ResponseController.
func (w *StatusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wrote records the status of a response whose body starts without one.
func (w *StatusRecorder) wrote() {
	if w.status == 0 {
		w.status = http.StatusOK
		if w.Settlement != nil {
			SetFields(w.Settlement, http.StatusOK, w.Header())
		}
	}
}

// SetFields sets s's rate-limit fields in h, a response's header, as they
// stand once the response is answered with status (admit.Settlement.SetFields),
// for an adapter on net/http's types.
func SetFields(s *admit.Settlement, status int, h http.Header) {
	s.SetFields(status, headerFields(h))
}

// headerFields is an http.Header seen as an admit.Writer, for SetFields.
type headerFields http.Header

func (h headerFields) SetHeader(key, value string) { h[key] = []string{value} }

func (h headerFields) ResponseHeader(key string) string {
	return strings.Join(h[key], ", ")
}

func (headerFields) WriteResponse(int, string, []byte) {} // never called
