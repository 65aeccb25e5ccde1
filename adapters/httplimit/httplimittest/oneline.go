package httplimittest

import (
	"bytes"
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// RunLimitByIP checks an adapter's one-line form, LimitByIP(p), which keeps
// its limits on a memory store with the system clock. serve builds an
// application answering 200 to GET / behind it, installed as the one-line
// form is meant to be used.
//
// No clock can be injected into the one-line form, so the check uses a
// policy no wait refills within a test, core.PerHour(3): three requests
// pass, the fourth is denied with Retry-After and the rate-limit fields,
// another client has an allowance of its own, and a forged X-Forwarded-For
// (no proxy is trusted) changes nothing. It asserts no duration beyond what
// the hour bounds. Then, the application dropped, it checks that the memory
// store's background sweep ends with it: nobody has to Close anything.
func RunLimitByIP(t *testing.T, serve func(t *testing.T, p *core.Policy) Server) {
	running := sweeps()
	checkLimitByIP(t, serve)
	for range 1000 {
		runtime.GC() // the store is unreachable: its cleanup stops the sweep
		if sweeps() <= running {
			return
		}
		time.Sleep(time.Millisecond) // for the sweep goroutine to see it
	}
	t.Errorf("the one-line form's store sweep outlived the application through 1000 collections (%d sweeps before, %d after)", running, sweeps())
}

func checkLimitByIP(t *testing.T, serve func(t *testing.T, p *core.Policy) Server) {
	p := core.PerHour(3)
	srv := serve(t, p)
	name := strconv.Quote(p.Name())
	policy := name + ";q=3;w=3600"

	for i, left := range []int{2, 1, 0} {
		resp := srv(Req{})
		require.Equalf(t, http.StatusOK, resp.Status, "request %d (body %q)", i+1, resp.Body)
		assert.Equalf(t, []string{policy}, resp.Header.Values("RateLimit-Policy"), "request %d", i+1)
		assert.Regexpf(t, `^`+name+`;r=`+strconv.Itoa(left)+`;t=\d+$`, resp.Header.Get("RateLimit"), "request %d", i+1)
	}

	denied := srv(Req{})
	require.Equal(t, http.StatusTooManyRequests, denied.Status)
	retry, err := strconv.Atoi(denied.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After")
	// One unit comes back every 20 minutes; a second at most has passed
	// since the first request, unless the machine stalled for longer.
	assert.True(t, retry >= 1 && retry <= 1200, "Retry-After %d, want 1 to 1200", retry)
	assert.Equal(t, name+";r=0;t="+strconv.Itoa(retry), denied.Header.Get("RateLimit"), "t is Retry-After on a denial")
	assert.Equal(t, policy, denied.Header.Get("RateLimit-Policy"))
	assert.Equal(t, "no-store", denied.Header.Get("Cache-Control"))
	assert.Equal(t, ProblemType, denied.Header.Get("Content-Type"))
	assert.Contains(t, denied.Body, `"violated-policies":[`+name+`]`)

	other := srv(Req{Remote: "192.0.2.2:1234"})
	assert.Equal(t, http.StatusOK, other.Status, "another client")
	assert.Regexp(t, `^`+name+`;r=2;t=\d+$`, other.Header.Get("RateLimit"), "another client")

	forged := srv(Req{Header: hdr("X-Forwarded-For", "198.51.100.1")})
	assert.Equal(t, http.StatusTooManyRequests, forged.Status, "X-Forwarded-For from a peer no one trusts")
}

// sweeps counts the goroutines running a memory store's background sweep.
func sweeps() int {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("sluice/store/memory.sweep("))
		}
		buf = make([]byte, 2*len(buf))
	}
}
