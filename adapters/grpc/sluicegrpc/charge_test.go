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

// A rule with Charge keeps the units of the calls whose status it selects,
// by the code's HTTP equivalent, and gives the others back; the header
// metadata report the standing once the call's status is known.
func TestChargeByStatus(t *testing.T) {
	_, limiter := newLimiter(t)
	failures := core.MustPolicy(core.PolicyConfig{Name: "failures", Algorithm: core.GCRA, Quota: 2, Period: 2 * time.Second, Burst: 2})
	in, err := sluicegrpc.New(sluicegrpc.Config{Calls: admit.Config{Limiter: limiter, Rules: []admit.Rule{{
		Policy: failures, Key: admit.ClientIP(), Routes: []string{unaryCall},
		Charge: func(status int) bool { return status >= 400 },
	}}}})
	require.NoError(t, err)
	c := dial(t, serve(t, in, nil), "")
	for range 3 {
		a := unary(t, c, unaryCall, codes.OK)
		assert.Equal(t, codes.OK, a.Code)
		assert.Equal(t, `"failures";r=2;t=0`, a.get("ratelimit"), "a success is given back")
	}
	a := unary(t, c, unaryCall, codes.PermissionDenied)
	assert.Equal(t, codes.PermissionDenied, a.Code)
	assert.Equal(t, `"failures";r=1;t=1`, a.get("ratelimit"))
	assert.Equal(t, `"failures";r=0;t=2`, unary(t, c, unaryCall, codes.InvalidArgument).get("ratelimit"))
	a = unary(t, c, unaryCall, codes.OK)
	assert.Equal(t, codes.ResourceExhausted, a.Code, "two failures spent the allowance")
	assert.Equal(t, `"failures";r=0;t=1`, a.get("ratelimit"))
}

// The HTTP equivalents of gRPC's codes and back.
func TestCodes(t *testing.T) {
	for _, s := range []int{200, 400, 401, 403, 404, 409, 429, 499, 500, 501, 503, 504} {
		assert.Equal(t, s, sluicegrpc.HTTPStatus(sluicegrpc.Code(s)), s)
	}
	assert.Equal(t, codes.Unknown, sluicegrpc.Code(418))
	assert.Equal(t, 500, sluicegrpc.HTTPStatus(codes.DataLoss))
}
