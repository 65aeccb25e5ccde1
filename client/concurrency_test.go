package client_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/client"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/fields"
	"github.com/sluice-go/sluice/store/memory"
)

// limitedServer is a sluice server that publishes its concurrency limit of
// n, behind a per-ip rule if rules, whose handler holds each request until
// the test lets it go; it counts the requests in its handler at once.
type limitedServer struct {
	*httptest.Server
	slots          *backpressure.Limiter
	release        chan struct{}
	inside, maxIn  atomic.Int64
	shed, answered atomic.Int64
}

func newLimitedServer(t *testing.T, n int, rules bool) *limitedServer {
	t.Helper()
	s := &limitedServer{release: make(chan struct{})}
	var err error
	s.slots, err = backpressure.New(backpressure.Config{Controller: backpressure.Static(n)})
	require.NoError(t, err)
	cfg := admit.Config{Concurrency: s.slots, AdvertiseConcurrency: true}
	if rules {
		store, err := memory.New()
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })
		cfg.Limiter, err = core.NewLimiter(store)
		require.NoError(t, err)
		p := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 1000, Period: time.Second, Burst: 1000})
		cfg.Rules = []admit.Rule{{Policy: p, Key: admit.ClientIP()}}
	}
	mw, err := sluicehttp.New(cfg)
	require.NoError(t, err)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &codeWriter{ResponseWriter: w, code: 200}
		mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := s.inside.Add(1)
			defer s.inside.Add(-1)
			for m := s.maxIn.Load(); n > m && !s.maxIn.CompareAndSwap(m, n); m = s.maxIn.Load() {
			}
			if r.URL.Path == "/hold" {
				<-s.release
			}
		})).ServeHTTP(rec, r)
		if rec.code == http.StatusServiceUnavailable {
			s.shed.Add(1)
		}
		s.answered.Add(1)
	}))
	t.Cleanup(s.Close)
	return s
}

type codeWriter struct {
	http.ResponseWriter
	code int
}

func (w *codeWriter) WriteHeader(code int) { w.code = code; w.ResponseWriter.WriteHeader(code) }

// The server publishes its concurrency limit as a quota of concurrent
// requests, in fields an independent RFC 9651 parser reads as the draft
// says, beside the rules' own.
func TestConcurrencyIsAdvertisedInValidFields(t *testing.T) {
	for _, rules := range []bool{false, true} {
		s := newLimitedServer(t, 4, rules)
		resp, err := http.Get(s.URL + "/")
		require.NoError(t, err)
		resp.Body.Close()
		policies, err := httpsfv.UnmarshalList(resp.Header.Values("RateLimit-Policy"))
		require.NoError(t, err, "RateLimit-Policy %q", resp.Header.Values("RateLimit-Policy"))
		limits, err := httpsfv.UnmarshalList(resp.Header.Values("RateLimit"))
		require.NoError(t, err, "RateLimit %q", resp.Header.Values("RateLimit"))
		want := 1
		if rules {
			want = 2
			assert.Equal(t, "per-ip", policies[0].(httpsfv.Item).Value)
		}
		require.Len(t, policies, want)
		require.Len(t, limits, want)
		p, l := policies[want-1].(httpsfv.Item), limits[want-1].(httpsfv.Item)
		assert.Equal(t, "concurrency", p.Value)
		q, _ := p.Params.Get("q")
		qu, _ := p.Params.Get("qu")
		assert.Equal(t, int64(4), q)
		assert.Equal(t, "concurrent-requests", qu)
		assert.Equal(t, "concurrency", l.Value)
		r, _ := l.Params.Get("r")
		tt, _ := l.Params.Get("t")
		assert.Equal(t, int64(3), r, "four slots, this request in one")
		assert.Equal(t, int64(0), tt)

		// And sluice's own parser reads it so.
		qs := fields.Parse(resp.Header, time.Now())
		require.Len(t, qs, want)
		assert.True(t, qs[want-1].Concurrent)
		assert.Equal(t, int64(4), qs[want-1].Limit)
		assert.Equal(t, int64(3), qs[want-1].Remaining)
		if rules {
			assert.False(t, qs[0].Concurrent)
		}
		// And the strict parsers sluicetest reads with accept it whole.
		ps, err := fields.ParsePolicies(resp.Header.Values("RateLimit-Policy"))
		require.NoError(t, err)
		assert.Equal(t, fields.Policy{Name: "concurrency", Quota: 4, Concurrent: true}, ps[want-1])
		items, err := fields.ParseItems(resp.Header.Values("RateLimit"))
		require.NoError(t, err)
		assert.Equal(t, fields.Item{Name: "concurrency", Remaining: 3}, items[want-1])
	}
}

// The client caps its requests in flight to the host at the published
// quota: ten requests at once to a server of two slots and no queue are
// never more than two in its handler, and none is shed.
func TestClientObeysThePublishedConcurrency(t *testing.T) {
	before := goleak.IgnoreCurrent()
	s := newLimitedServer(t, 2, true)
	tr, err := client.NewTransport(nil)
	require.NoError(t, err)
	hc := &http.Client{Transport: tr}
	resp, err := hc.Get(s.URL + "/") // learns the quota
	require.NoError(t, err)
	resp.Body.Close()

	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			resp, err := hc.Get(s.URL + "/hold")
			if assert.NoError(t, err) {
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				resp.Body.Close()
			}
		})
	}
	// Let them go one at a time, once two are in (a bounded poll).
	for released := 0; released < 10; released++ {
		deadline := time.Now().Add(10 * time.Second)
		for s.inside.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		s.release <- struct{}{}
	}
	wg.Wait()
	assert.Equal(t, int64(2), s.maxIn.Load(), "never more than the two slots published")
	assert.Zero(t, s.shed.Load(), "the server never had to shed")
	assert.Equal(t, int64(11), s.answered.Load())
	tr.CloseIdleConnections()
	s.Close()
	// No waiter left behind (the store sweeps until the test ends).
	goleak.VerifyNone(t, before, goleak.IgnoreTopFunction("github.com/sluice-go/sluice/store/memory.sweep"))

	// Without the cap (a transport that does not pace), the same burst
	// overruns the two slots and the server sheds.
	s2 := newLimitedServer(t, 2, true)
	plain, err := client.NewTransport(nil, client.WithoutPacing(), client.WithMaxAttempts(1))
	require.NoError(t, err)
	hc = &http.Client{Transport: plain}
	var shedSeen atomic.Int64
	for range 10 {
		wg.Go(func() {
			resp, err := hc.Get(s2.URL + "/hold")
			if err == nil {
				if resp.StatusCode == http.StatusServiceUnavailable {
					shedSeen.Add(1)
				}
				resp.Body.Close()
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for s2.shed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(s2.release)
	wg.Wait()
	assert.Positive(t, shedSeen.Load(), "some of the ten shed")
}
