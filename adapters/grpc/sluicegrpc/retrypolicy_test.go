package sluicegrpc_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/grpc/sluicegrpc"
	"github.com/sluice-go/sluice/core"
)

// retryConfig is a service config with grpc-go's own retry policy and
// retry throttling, whose backoff is 30 s: a retry sooner than 24 s (its
// least jittered wait) waited for the server's push-back instead.
const retryConfig = `{
	"methodConfig": [{
		"name": [{"service": "grpc.testing.TestService"}],
		"retryPolicy": {
			"maxAttempts": 3,
			"initialBackoff": "30s",
			"maxBackoff": "30s",
			"backoffMultiplier": 1,
			"retryableStatusCodes": ["RESOURCE_EXHAUSTED", "UNAVAILABLE"]
		}
	}],
	"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
}`

// attempts records when each attempt of a call reached the server, and
// advances the limiter's clock by a second after a refusal, so that the
// retry the push-back asks for fits.
type attempts struct {
	mu      sync.Mutex
	at      []time.Time
	advance func()
}

func (a *attempts) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	a.mu.Lock()
	a.at = append(a.at, time.Now())
	a.mu.Unlock()
	resp, err := h(ctx, req)
	if status.Code(err) == codes.ResourceExhausted {
		a.advance()
	}
	return resp, err
}

// grpc-go's own retry policy, with retryThrottling, waits the server's
// push-back (1000 ms) before its retry, rather than its backoff (30 s): at
// least the push-back, and far less than the backoff. The retry fits, and
// the call succeeds with no error the application sees.
func TestGRPCRetryPolicyWaitsThePushback(t *testing.T) {
	clock, limiter := newLimiter(t)
	one := core.MustPolicy(core.PolicyConfig{Name: "one", Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 1})
	in, err := sluicegrpc.New(sluicegrpc.Config{Calls: admit.Config{Limiter: limiter,
		Rules: []admit.Rule{{Policy: one, Key: admit.ClientIP()}}}})
	require.NoError(t, err)
	rec := &attempts{advance: func() { clock.Advance(time.Second) }}
	addr := serve(t, nil, nil, grpc.ChainUnaryInterceptor(rec.intercept, in.Unary))
	c := dial(t, addr, "", grpc.WithDefaultServiceConfig(retryConfig))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = c.EmptyCall(ctx, &testgrpc.Empty{})
	require.NoError(t, err)
	_, err = c.EmptyCall(ctx, &testgrpc.Empty{}) // refused, retried after the push-back
	require.NoError(t, err)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.at, 3)
	gap := rec.at[2].Sub(rec.at[1])
	assert.GreaterOrEqual(t, gap, time.Second, "the retry came before the push-back")
	assert.Less(t, gap, 24*time.Second, "the retry waited the backoff, not the push-back")
}
