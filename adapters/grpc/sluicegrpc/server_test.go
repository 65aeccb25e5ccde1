package sluicegrpc_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/grpc/sluicegrpc"
	"github.com/sluice-go/sluice/core"
)

func perPeer() *core.Policy {
	return core.MustPolicy(core.PolicyConfig{Name: "per-peer", Algorithm: core.GCRA, Quota: 2, Period: 2 * time.Second, Burst: 2})
}

// A call the rules allow carries the RateLimit fields as header metadata;
// one they refuse fails with ResourceExhausted, a RetryInfo of the delay,
// and the fields and gRPC's push-back as trailer metadata.
func TestUnaryAnswers(t *testing.T) {
	clock, limiter := newLimiter(t)
	in, err := sluicegrpc.New(sluicegrpc.Config{Calls: admit.Config{Limiter: limiter,
		Rules: []admit.Rule{{Policy: perPeer(), Key: admit.ClientIP()}}}})
	require.NoError(t, err)
	c := dial(t, serve(t, in, nil), "127.0.0.2")

	a := unary(t, c, emptyCall, codes.OK)
	assert.Equal(t, codes.OK, a.Code)
	assert.Equal(t, []string{`"per-peer";q=2;w=2`}, a.Header.Get("ratelimit-policy"))
	assert.Equal(t, []string{`"per-peer";r=1;t=1`}, a.Header.Get("ratelimit"))
	assert.Empty(t, a.Trailer.Get("ratelimit"))

	a = unary(t, c, emptyCall, codes.OK)
	assert.Equal(t, codes.OK, a.Code)
	assert.Equal(t, []string{`"per-peer";r=0;t=2`}, a.Header.Get("ratelimit"))

	a = unary(t, c, emptyCall, codes.OK)
	assert.Equal(t, codes.ResourceExhausted, a.Code)
	assert.Equal(t, time.Second, a.Retry)
	assert.Equal(t, []string{"1000"}, a.Trailer.Get(sluicegrpc.PushbackKey))
	assert.Equal(t, []string{`"per-peer";q=2;w=2`}, a.Trailer.Get("ratelimit-policy"))
	assert.Equal(t, []string{`"per-peer";r=0;t=1`}, a.Trailer.Get("ratelimit"))
	assert.Equal(t, []string{"1"}, a.Trailer.Get("retry-after"))
	assert.Empty(t, a.Header.Get("ratelimit"), "a refusal is trailers-only, which grpc-go's retries need")

	// Another peer has its own allowance.
	assert.Equal(t, codes.OK, unary(t, dial(t, serve(t, in, nil), "127.0.0.3"), emptyCall, codes.OK).Code)

	clock.Advance(time.Second)
	assert.Equal(t, codes.OK, unary(t, c, emptyCall, codes.OK).Code)
}
