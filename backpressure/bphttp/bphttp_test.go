package bphttp

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/backpressure"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRejectsWith503(t *testing.T) {
	l, err := backpressure.New(backpressure.Config{Algorithm: backpressure.Static(1), MinRetryAfter: 1500 * time.Millisecond})
	require.NoError(t, err)
	mw, err := New(Config{Limiter: l})
	require.NoError(t, err)
	held, err := l.Acquire(context.Background(), "", backpressure.Default)
	require.NoError(t, err)
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("admitted") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "2", rec.Header().Get("Retry-After"))
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	assert.Equal(t, ProblemContentType, rec.Header().Get("Content-Type"))
	assert.JSONEq(t, `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"The service is overloaded; retry after 2 seconds."}`, rec.Body.String())
	held.Release()
	assert.Equal(t, 0, l.InFlight())
}

func TestClassesAndKeys(t *testing.T) {
	l, err := backpressure.New(backpressure.Config{Algorithm: backpressure.Static(2), PerKey: 1, Reserve: backpressure.Reserve{Critical: 0.5}})
	require.NoError(t, err)
	mw, err := New(Config{
		Limiter: l,
		Key:     func(r *http.Request) string { return r.Header.Get("User") },
		Class: func(r *http.Request) backpressure.Class {
			if r.URL.Path == "/health" {
				return backpressure.Critical
			}
			return backpressure.Default
		},
	})
	require.NoError(t, err)
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	serve := func(path, user string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("User", user)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	var wg sync.WaitGroup
	wg.Go(func() { assert.Equal(t, 200, serve("/", "a").Code) })
	<-entered
	assert.Equal(t, 503, serve("/", "b").Code, "the second slot is critical's")
	assert.Equal(t, 503, serve("/health", "a").Code, "user a has its one request in flight")
	wg.Go(func() { assert.Equal(t, 200, serve("/health", "b").Code) })
	<-entered
	close(release)
	wg.Wait()
	assert.Equal(t, 0, l.InFlight())
}

// sample records what the middleware reports to the algorithm.
type sample struct {
	mu      sync.Mutex
	samples []backpressure.Sample
}

func (s *sample) Limit() int { return 100 }
func (s *sample) Update(x backpressure.Sample) int {
	s.mu.Lock()
	s.samples = append(s.samples, x)
	s.mu.Unlock()
	return 100
}

func TestResults(t *testing.T) {
	alg := &sample{}
	l, err := backpressure.New(backpressure.Config{Algorithm: alg})
	require.NoError(t, err)
	mw, err := New(Config{Limiter: l})
	require.NoError(t, err)
	for _, c := range []struct {
		name    string
		h       func(cancel context.CancelFunc) http.HandlerFunc
		timeout time.Duration
		samples int
		dropped bool
	}{
		{name: "ok", samples: 1, h: func(context.CancelFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }
		}},
		{name: "implicit 200", samples: 1, h: func(context.CancelFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {}
		}},
		{name: "503", samples: 1, dropped: true, h: func(context.CancelFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }
		}},
		{name: "103 then 504", samples: 1, dropped: true, h: func(context.CancelFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(103); w.WriteHeader(504) }
		}},
		{name: "500", samples: 1, h: func(context.CancelFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }
		}},
		{name: "client gone", samples: 0, h: func(cancel context.CancelFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { cancel() }
		}},
		{name: "deadline", samples: 1, dropped: true, timeout: time.Millisecond, h: func(context.CancelFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
		}},
	} {
		alg.samples = nil
		ctx, cancel := context.WithCancel(context.Background())
		if c.timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, c.timeout)
		}
		req := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
		mw(c.h(cancel)).ServeHTTP(httptest.NewRecorder(), req)
		cancel()
		require.Len(t, alg.samples, c.samples, c.name)
		if c.samples > 0 {
			assert.Equal(t, c.dropped, alg.samples[0].Dropped, c.name)
		}
		assert.Equal(t, 0, l.InFlight(), c.name)
	}
}

func TestPanicFreesTheSlot(t *testing.T) {
	l, err := backpressure.New(backpressure.Config{Algorithm: backpressure.Static(1)})
	require.NoError(t, err)
	mw, err := New(Config{Limiter: l})
	require.NoError(t, err)
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }))
	assert.PanicsWithValue(t, http.ErrAbortHandler, func() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	})
	assert.Equal(t, 0, l.InFlight())
}

// TestNoSlotLeaksOverTheWire runs a real server whose handlers panic, run
// past their clients' timeouts and see their clients cancel, and checks
// that every slot comes back.
func TestNoSlotLeaksOverTheWire(t *testing.T) {
	l, err := backpressure.New(backpressure.Config{Algorithm: backpressure.Static(4), Queue: 4, MaxWait: 20 * time.Millisecond})
	require.NoError(t, err)
	mw, err := New(Config{Limiter: l})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic("handler bug")
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		io.WriteString(w, "ok")
	})))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	client := srv.Client()
	var wg sync.WaitGroup
	for i := range 120 {
		wg.Go(func() {
			path := []string{"/panic", "/slow", "/fast"}[i%3]
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+i%20)*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
			resp, err := client.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			} else if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, io.EOF) {
				t.Log(err) // panics close the connection
			}
		})
	}
	wg.Wait()
	require.Eventually(t, func() bool { return l.InFlight() == 0 && l.Waiting() == 0 }, 10*time.Second, time.Millisecond)
	client.CloseIdleConnections()
}
