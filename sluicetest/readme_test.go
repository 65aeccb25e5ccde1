package sluicetest_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
)

// README's "Testing your own handlers" shows TestLoginIsLimited, word for
// word, so that what it shows is a test that runs.
func TestREADMEShowsTestLoginIsLimited(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	start := bytes.Index(src, []byte("\nfunc TestLoginIsLimited(t")) + 1
	require.Positive(t, start)
	assert.True(t, bytes.Contains(readme, append(src[start:], []byte("```")...)), "README's test differs from TestLoginIsLimited")
}

func TestLoginIsLimited(t *testing.T) {
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store := sluicetest.NewStore(clock)
	defer store.Close()
	limiter, err := core.NewLimiter(store)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := sluicehttp.New(admit.Config{
		Limiter: limiter,
		Rules:   []admit.Rule{{Policy: core.PerMinute(2), Key: admit.ClientIP()}},
		Clock:   clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	post := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/login", nil))
		return rec
	}
	sluicetest.AssertRemaining(t, post(), "2-per-minute", 1)
	sluicetest.AssertRemaining(t, post(), "2-per-minute", 0)
	sluicetest.AssertRetryAfter(t, post(), 30)
	clock.Advance(30 * time.Second) // no sleeping: a unit is back
	sluicetest.AssertRemaining(t, post(), "2-per-minute", 0)
}
