package sluicetest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/fields"
	"github.com/sluice-go/sluice/sluicetest"
)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestParseFields(t *testing.T) {
	f, err := sluicetest.ParseFields(header(
		"RateLimit-Policy", `"per-ip";q=10;w=5, "free";q=2;w=60`,
		"RateLimit", `"per-ip";r=9;t=1`,
		"RateLimit", `"free";r=0;t=30`, // a list may come in several lines
		"Retry-After", "30",
	))
	require.NoError(t, err)
	assert.Equal(t, sluicetest.Fields{
		Policies:   []fields.Policy{{Name: "per-ip", Quota: 10, Window: 5}, {Name: "free", Quota: 2, Window: 60}},
		Limits:     []fields.Item{{Name: "per-ip", Remaining: 9, Reset: 1}, {Name: "free", Remaining: 0, Reset: 30}},
		RetryAfter: 30,
	}, f)
	l, ok := f.Limit("free")
	assert.True(t, ok)
	assert.Equal(t, int64(30), l.Reset)
	_, ok = f.Limit("pro")
	assert.False(t, ok)

	// A concurrency limit advertised beside the rules (Config.AdvertiseConcurrency).
	f, err = sluicetest.ParseFields(header(
		"RateLimit-Policy", `"per-ip";q=10;w=5, "concurrency";q=64;qu="concurrent-requests"`,
		"RateLimit", `"per-ip";r=9;t=1, "concurrency";r=63;t=0`,
	))
	require.NoError(t, err)
	assert.Equal(t, []fields.Policy{{Name: "per-ip", Quota: 10, Window: 5}, {Name: "concurrency", Quota: 64, Concurrent: true}}, f.Policies)
	assert.Equal(t, []fields.Item{{Name: "per-ip", Remaining: 9, Reset: 1}, {Name: "concurrency", Remaining: 63}}, f.Limits)

	f, err = sluicetest.ParseFields(http.Header{})
	require.NoError(t, err)
	assert.Equal(t, sluicetest.Fields{RetryAfter: -1}, f, "no fields")

	for _, bad := range []http.Header{
		header("RateLimit", `per-ip;r=9;t=1`),
		header("RateLimit", `"per-ip";r=9`),
		header("RateLimit", `"per-ip";r="9";t=1`),
		header("RateLimit", `"per-ip";r=9;t=1,`),
		header("RateLimit", `"per-ip";r=-1;t=1`),
		header("RateLimit-Policy", `"per-ip";w=10`),
		header("RateLimit-Policy", `"per-ip";q=10;w=5, "free";q=2;w=60,`),
		header("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"),
		header("Retry-After", "-1"),
		header("Retry-After", "1", "Retry-After", "2"),
		header("Retry-After", "+1"),
		header("Retry-After", " 1"),
		header("Retry-After", ""),
	} {
		_, err := sluicetest.ParseFields(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// recorderTB records what the assertions report, for tests of the
// assertions themselves.
type recorderTB struct {
	testing.TB
	errors []string
}

func (r *recorderTB) Helper() {}
func (r *recorderTB) Error(args ...any) {
	r.errors = append(r.errors, fmt.Sprint(args...))
}
func (r *recorderTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestAssertions(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("RateLimit", `"per-ip";r=0;t=12`)
	rec.Header().Set("Retry-After", "12")
	rec.WriteHeader(http.StatusTooManyRequests)

	tb := &recorderTB{TB: t}
	assert.True(t, sluicetest.AssertRemaining(tb, rec, "per-ip", 0))
	assert.True(t, sluicetest.AssertRetryAfter(tb, rec, 12))
	assert.Empty(t, tb.errors)

	assert.False(t, sluicetest.AssertRemaining(tb, rec, "per-ip", 3))
	assert.False(t, sluicetest.AssertRemaining(tb, rec, "free", 0))
	assert.False(t, sluicetest.AssertRetryAfter(tb, rec, 1))
	assert.Equal(t, []string{
		`sluicetest: policy "per-ip": 0 remaining, want 3 (RateLimit ["\"per-ip\";r=0;t=12"])`,
		`sluicetest: RateLimit ["\"per-ip\";r=0;t=12"] has no member for policy "free"`,
		`sluicetest: Retry-After 12 (-1: none), want 1`,
	}, tb.errors)

	ok := httptest.NewRecorder()
	ok.WriteHeader(http.StatusOK)
	tb.errors = nil
	assert.False(t, sluicetest.AssertRetryAfter(tb, ok, 1))
	assert.Equal(t, []string{"sluicetest: status 200, want a denial (429 or 503) with Retry-After 1"}, tb.errors)
}

// The fields of a response two middlewares limited, per IP then per plan,
// read as a client reads them.
func ExampleParseFields() {
	h := http.Header{}
	h.Set("RateLimit-Policy", `"per-ip";q=10;w=5, "free";q=2;w=60`)
	h.Set("RateLimit", `"per-ip";r=9;t=1, "free";r=1;t=30`)
	f, err := sluicetest.ParseFields(h)
	if err != nil {
		panic(err)
	}
	for _, l := range f.Limits {
		fmt.Printf("%s: %d left, more in %d s\n", l.Name, l.Remaining, l.Reset)
	}
	// Output:
	// per-ip: 9 left, more in 1 s
	// free: 1 left, more in 30 s
}
