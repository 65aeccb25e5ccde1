// Package bphttp puts a backpressure.Limiter in front of a net/http
// handler: a request that finds the service saturated gets 503 Service
// Unavailable with Retry-After and an RFC 9457 problem body, and every
// admitted request frees its slot when the handler returns, panics
// included, reporting its latency and how it went to the Limiter's
// algorithm.
package bphttp

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-go/sluice/backpressure"
)

// Config configures the middleware.
type Config struct {
	// Limiter decides. Required.
	Limiter *backpressure.Limiter
	// Key returns the request's key, for a Limiter with a per-key limit
	// (nil: every request has the key "").
	Key func(*http.Request) string
	// Class returns the request's class (nil: backpressure.Default).
	Class func(*http.Request) backpressure.Class
	// Dropped reports whether a response status says the service is
	// overloaded, so that the Limiter's algorithm backs off (nil: 503 and
	// 504, as a dependency or http.TimeoutHandler answers).
	Dropped func(status int) bool
}

// New returns the middleware. A request the Limiter admits runs the
// handler, and its result is reported as:
//
//   - backpressure.Dropped when the handler answered a status Config.Dropped
//     accepts, or the request's context passed its deadline;
//   - backpressure.Ignored when the client went away (the context was
//     cancelled: the handler may have stopped early, so its latency says
//     nothing) or the handler panicked;
//   - backpressure.Succeeded otherwise.
func New(c Config) (func(http.Handler) http.Handler, error) {
	if c.Limiter == nil {
		return nil, errors.New("bphttp: nil Limiter")
	}
	if c.Dropped == nil {
		c.Dropped = func(status int) bool {
			return status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var key string
			if c.Key != nil {
				key = c.Key(r)
			}
			class := backpressure.Default
			if c.Class != nil {
				class = c.Class(r)
			}
			ctx := r.Context()
			p, err := c.Limiter.Acquire(ctx, key, class)
			if err != nil {
				reject(w, err)
				return
			}
			defer p.Release() // a panicking handler frees its slot too
			sw := statusWriters.Get().(*statusWriter)
			sw.ResponseWriter, sw.status = w, 0
			defer func() {
				sw.ResponseWriter = nil
				statusWriters.Put(sw)
			}()
			next.ServeHTTP(sw, r)
			switch err := ctx.Err(); {
			case errors.Is(err, context.DeadlineExceeded):
				p.Done(backpressure.Dropped)
			case err != nil:
				p.Done(backpressure.Ignored)
			case c.Dropped(sw.code()):
				p.Done(backpressure.Dropped)
			default:
				p.Done(backpressure.Succeeded)
			}
		})
	}, nil
}

// reject answers a request the Limiter did not admit: 503 with Retry-After
// for a rejection; a bare 503 when the request's own context ended while it
// waited (its client is most likely gone).
func reject(w http.ResponseWriter, err error) {
	var rej *backpressure.Rejection
	if !errors.As(err, &rej) {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	secs := RetryAfterSeconds(rej.RetryAfter)
	h := w.Header()
	h.Set("Retry-After", strconv.FormatInt(secs, 10))
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", ProblemContentType)
	w.WriteHeader(http.StatusServiceUnavailable)
	b := make([]byte, 0, 160)
	b = append(b, `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"The service is overloaded; retry after `...)
	b = strconv.AppendInt(b, secs, 10)
	if secs == 1 {
		b = append(b, ` second."}`...)
	} else {
		b = append(b, ` seconds."}`...)
	}
	w.Write(b)
}

// ProblemContentType is the media type of the 503 bodies.
const ProblemContentType = "application/problem+json"

// RetryAfterSeconds renders a RetryAfter as Retry-After's whole seconds:
// rounded up, and at least 1, since "Retry-After: 0" invites the retry
// storm backpressure is there to prevent.
func RetryAfterSeconds(d time.Duration) int64 {
	return max(int64((d+time.Second-1)/time.Second), 1)
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

var statusWriters = sync.Pool{New: func() any { return new(statusWriter) }}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush flushes the response, if the underlying writer can.
func (w *statusWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
