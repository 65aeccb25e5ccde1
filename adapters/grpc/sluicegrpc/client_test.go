package sluicegrpc_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/grpc/sluicegrpc"
	"github.com/sluice-go/sluice/client"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
)

// sleepClock is the client's clock in these tests: it reads the server's
// manual clock, and a sleep moves that clock to its end at once, recorded.
type sleepClock struct {
	*sluicetest.ManualClock
	mu     sync.Mutex
	sleeps []time.Duration
}

func (c *sleepClock) SleepUntil(ctx context.Context, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := t.Sub(c.Now()); d > 0 {
		c.sleeps = append(c.sleeps, d)
		c.Set(t)
	}
	return nil
}

func (c *sleepClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// counter counts the calls that reach the server, and answers those with
// metadata "answer" with that code, before sluice's interceptor.
type counter struct{ n atomic.Int64 }

func (c *counter) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	c.n.Add(1)
	if v := metadata.ValueFromIncomingContext(ctx, "answer"); len(v) > 0 {
		switch v[0] {
		case "unavailable":
			return nil, status.Error(codes.Unavailable, "down")
		case "denied":
			return nil, status.Error(codes.PermissionDenied, "no")
		case "abort":
			_ = grpc.SetTrailer(ctx, metadata.Pairs(sluicegrpc.PushbackKey, "-1"))
			return nil, status.Error(codes.ResourceExhausted, "never again")
		}
	}
	return h(ctx, req)
}

// clientEnv is a server limited to one call a second per peer, and a
// client of it through sluicegrpc's client interceptor, on one clock.
type clientEnv struct {
	clock  *sleepClock
	calls  *counter
	client testgrpc.TestServiceClient
	plain  testgrpc.TestServiceClient // a client without the interceptor, from the same address
}

func newClientEnv(t *testing.T, cfg sluicegrpc.ClientConfig, policy *core.Policy) *clientEnv {
	manual, limiter := newLimiter(t)
	clock := &sleepClock{ManualClock: manual}
	in, err := sluicegrpc.New(sluicegrpc.Config{Calls: admit.Config{Limiter: limiter,
		Rules: []admit.Rule{{Policy: policy, Key: admit.ClientIP()}}}})
	require.NoError(t, err)
	calls := &counter{}
	addr := serve(t, nil, nil, grpc.ChainUnaryInterceptor(calls.intercept, in.Unary))
	cfg.Clock = clock
	cfg.Rand = rand.NewPCG(1, 2)
	ci, err := sluicegrpc.NewClient(cfg)
	require.NoError(t, err)
	return &clientEnv{clock: clock, calls: calls, client: dial(t, addr, "", grpc.WithUnaryInterceptor(ci.Unary)), plain: dial(t, addr, "")}
}

func onePerSecond() *core.Policy {
	return core.MustPolicy(core.PolicyConfig{Name: "one", Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 1})
}

// call calls method with metadata kv, under a context without a deadline:
// the client would read one on its clock, which is the manual clock.
func (e *clientEnv) call(t *testing.T, method string, kv ...string) error {
	ctx := metadata.AppendToOutgoingContext(context.Background(), kv...)
	var err error
	if method == emptyCall {
		_, err = e.client.EmptyCall(ctx, &testgrpc.Empty{})
	} else {
		_, err = e.client.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	}
	return err
}

// A refused call of a method safe to retry is retried after the server's
// delay, as a floor with jitter on top, and succeeds.
func TestClientRetriesWithPushback(t *testing.T) {
	e := newClientEnv(t, sluicegrpc.ClientConfig{Methods: []string{emptyCall}}, onePerSecond())
	_, err := e.plain.EmptyCall(context.Background(), &testgrpc.Empty{}) // another client spends the allowance
	require.NoError(t, err)
	require.NoError(t, e.call(t, emptyCall))
	assert.EqualValues(t, 3, e.calls.n.Load(), "the call was refused, then retried")
	sleeps := e.clock.Sleeps()
	require.Len(t, sleeps, 1)
	assert.GreaterOrEqual(t, sleeps[0], time.Second, "the push-back is a floor")
	assert.Less(t, sleeps[0], time.Second+client.DefaultBackoffBase, "jitter on top, within the backoff's base")
}

// Only the methods listed, and only the codes safe to retry, are retried;
// a push-back that says not to retry is obeyed.
func TestClientRetriesOnlyWhatIsSafe(t *testing.T) {
	e := newClientEnv(t, sluicegrpc.ClientConfig{Methods: []string{emptyCall}}, core.MustPolicy(core.PolicyConfig{Name: "many", Algorithm: core.GCRA, Quota: 100, Period: time.Second, Burst: 100}))
	assert.Equal(t, codes.Unavailable, status.Code(e.call(t, unaryCall, "answer", "unavailable")))
	assert.EqualValues(t, 1, e.calls.n.Load(), "a method not listed is never retried")
	assert.Equal(t, codes.PermissionDenied, status.Code(e.call(t, emptyCall, "answer", "denied")))
	assert.EqualValues(t, 2, e.calls.n.Load(), "a code that would fail again is not retried")
	assert.Equal(t, codes.ResourceExhausted, status.Code(e.call(t, emptyCall, "answer", "abort")))
	assert.EqualValues(t, 3, e.calls.n.Load(), "a negative push-back says not to retry")
	assert.Equal(t, codes.Unavailable, status.Code(e.call(t, emptyCall, "answer", "unavailable")))
	assert.EqualValues(t, 3+client.DefaultMaxAttempts, e.calls.n.Load(), "a listed method is retried up to MaxAttempts")
}

// The retry budget bounds retries across calls, and the breaker fails
// calls at once, without sending them, once the target keeps failing.
func TestClientBudgetAndBreaker(t *testing.T) {
	budget, err := client.NewRetryBudget(4, 0.1)
	require.NoError(t, err)
	e := newClientEnv(t, sluicegrpc.ClientConfig{Methods: []string{"/grpc.testing.TestService/*"}, Budget: budget,
		Breaker: func() *client.Breaker {
			b, err := client.NewBreaker(client.BreakerConfig{ConsecutiveFailures: 5})
			require.NoError(t, err)
			return b
		}()}, core.MustPolicy(core.PolicyConfig{Name: "many", Algorithm: core.GCRA, Quota: 100, Period: time.Second, Burst: 100}))
	assert.Equal(t, codes.Unavailable, status.Code(e.call(t, emptyCall, "answer", "unavailable")))
	assert.EqualValues(t, 2, e.calls.n.Load(), "4 tokens, a retry while more than half full: one retry")
	for n := 3; n <= 5; n++ {
		assert.Equal(t, codes.Unavailable, status.Code(e.call(t, emptyCall, "answer", "unavailable")))
		assert.EqualValues(t, n, e.calls.n.Load(), "the budget is spent: no retry")
	}
	// The fifth failure in a row opened the breaker.
	err = e.call(t, emptyCall)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	var open *client.CircuitOpenError
	assert.True(t, errors.As(err, &open), "%v", err)
	assert.EqualValues(t, 5, e.calls.n.Load(), "not sent")
}

// The client paces its calls by the RateLimit metadata: at the sustained
// rate the policy states once its burst allowance is spent, so that it
// never runs into a refusal.
func TestClientPaces(t *testing.T) {
	ten := core.MustPolicy(core.PolicyConfig{Name: "ten", Algorithm: core.GCRA, Quota: 10, Period: 10 * time.Second, Burst: 10})
	e := newClientEnv(t, sluicegrpc.ClientConfig{}, ten)
	for range 15 {
		require.NoError(t, e.call(t, unaryCall))
	}
	assert.EqualValues(t, 15, e.calls.n.Load(), "no refusal, no retry")
	sleeps := e.clock.Sleeps()
	require.NotEmpty(t, sleeps)
	for _, d := range sleeps {
		assert.Equal(t, time.Second, d, "ten per ten seconds: one a second")
	}
}
