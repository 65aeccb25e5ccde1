package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// README's quick start shows this program, and its transcript: the first
// request, a burst of ten of which the last is refused, and the refusal.
func TestTranscript(t *testing.T) {
	srv := httptest.NewServer(newHandler())
	defer srv.Close()

	res := get(t, srv.URL)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, `"10-per-hour";r=9;t=360`, res.Header.Get("RateLimit"))
	assert.Equal(t, `"10-per-hour";q=10;w=3600`, res.Header.Get("RateLimit-Policy"))
	assert.Equal(t, "6", res.Header.Get("Content-Length"))

	var codes []int
	for range 10 {
		codes = append(codes, get(t, srv.URL).StatusCode)
	}
	assert.Equal(t, []int{200, 200, 200, 200, 200, 200, 200, 200, 200, 429}, codes)

	res = get(t, srv.URL)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	retry, err := strconv.Atoi(res.Header.Get("Retry-After"))
	require.NoError(t, err)
	assert.True(t, retry > 0 && retry <= 360, "Retry-After %d: a token comes back within 6 minutes", retry)
	assert.Equal(t, `"10-per-hour";r=0;t=`+strconv.Itoa(retry), res.Header.Get("RateLimit"))
	assert.Equal(t, "application/problem+json", res.Header.Get("Content-Type"))
}

// The quick start in README is this program, word for word.
func TestREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	// README shows the program from its package clause on.
	prog := src[bytes.Index(src, []byte("package main")):]
	assert.True(t, bytes.Contains(readme, append([]byte("```go\n"), prog...)), "README's quick start differs from examples/quickstart/main.go")
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	return res
}
