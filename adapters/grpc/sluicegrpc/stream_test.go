package sluicegrpc_test

import (
	"context"
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
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/sluicetest"
)

// A client that opened a stream cannot send past the per-message rate: the
// message over it fails the stream with ResourceExhausted, its RetryInfo
// and push-back, and the messages within it were all served.
func TestStreamPerMessageRate(t *testing.T) {
	clock, limiter := newLimiter(t)
	perMessage := core.MustPolicy(core.PolicyConfig{Name: "messages", Algorithm: core.TokenBucket, Quota: 3, Period: 3 * time.Second, Burst: 3})
	starts := core.MustPolicy(core.PolicyConfig{Name: "streams", Algorithm: core.TokenBucket, Quota: 10, Period: time.Second, Burst: 10})
	in, err := sluicegrpc.New(sluicegrpc.Config{
		Calls:    admit.Config{Limiter: limiter, Rules: []admit.Rule{{Policy: starts, Key: admit.ClientIP()}}},
		Received: &admit.Config{Limiter: limiter, Rules: []admit.Rule{{Policy: perMessage, Key: admit.ClientIP(), Routes: []string{"/grpc.testing.TestService/*"}}}},
	})
	require.NoError(t, err)
	c := dial(t, serve(t, in, nil), "")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.FullDuplexCall(ctx)
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
		_, err := s.Recv()
		require.NoError(t, err, "message %d is within the rate", i)
	}
	header, err := s.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{`"streams";r=9;t=1`}, header.Get("ratelimit"), "the stream's start")

	require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = s.Recv()
	a := read(err, nil, s.Trailer())
	assert.Equal(t, codes.ResourceExhausted, a.Code)
	assert.Equal(t, time.Second, a.Retry)
	assert.Equal(t, []string{"1000"}, a.Trailer.Get(sluicegrpc.PushbackKey))
	assert.Equal(t, []string{`"messages";r=0;t=1`}, a.Trailer.Get("ratelimit"))
	assert.Equal(t, []string{`"messages";q=3;w=3`}, a.Trailer.Get("ratelimit-policy"))

	// The rate is the client's, not the stream's: a new stream starts
	// with what the last one left, nothing.
	s, err = c.FullDuplexCall(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = s.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))

	clock.Advance(time.Second)
	s, err = c.FullDuplexCall(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = s.Recv()
	assert.NoError(t, err)
}

// A limit on the messages the server sends refuses the one over it, which
// is never sent.
func TestStreamSentRate(t *testing.T) {
	_, limiter := newLimiter(t)
	sent := core.MustPolicy(core.PolicyConfig{Name: "sent", Algorithm: core.GCRA, Quota: 2, Period: 2 * time.Second, Burst: 2})
	in, err := sluicegrpc.New(sluicegrpc.Config{
		Calls: admit.Config{Limiter: limiter, Rules: []admit.Rule{{Policy: perPeer(), Key: admit.Const("all"), Routes: []string{emptyCall}}}},
		Sent:  &admit.Config{Limiter: limiter, Rules: []admit.Rule{{Policy: sent, Key: admit.ClientIP()}}},
	})
	require.NoError(t, err)
	c := dial(t, serve(t, in, nil), "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.FullDuplexCall(ctx)
	require.NoError(t, err)
	for range 2 {
		require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
		_, err := s.Recv()
		require.NoError(t, err)
	}
	require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = s.Recv()
	a := read(err, nil, s.Trailer())
	assert.Equal(t, codes.ResourceExhausted, a.Code)
	assert.Equal(t, []string{`"sent";r=0;t=1`}, a.Trailer.Get("ratelimit"))
}

// events records a concurrency limit's events, by kind.
type events map[core.Kind]chan core.Event

func newEvents() events {
	return events{core.Admitted: make(chan core.Event, 64), core.Released: make(chan core.Event, 64), core.Shed: make(chan core.Event, 64)}
}

func (e events) observe(_ context.Context, ev core.Event) {
	if ch, ok := e[ev.Kind]; ok {
		ch <- ev
	}
}

// next returns the next event of kind, failing the test after a while.
func (e events) next(t *testing.T, kind core.Kind) core.Event {
	t.Helper()
	select {
	case ev := <-e[kind]:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatalf("no %v event", kind)
		return core.Event{}
	}
}

// slots returns a concurrency limit of n slots and no queue on clock,
// whose events go to ev.
func slots(t *testing.T, clock *sluicetest.ManualClock, n int, ev events) *backpressure.Limiter {
	l, err := backpressure.New(backpressure.Config{Name: "slots", Controller: backpressure.Static(n), Clock: clock, Observer: ev.observe})
	require.NoError(t, err)
	return l
}

// A stream holds its slot until it ends, however it ends: cancelled
// mid-way by its client, it gives the slot back, and the next stream
// takes it; while it is held, another stream is shed with Unavailable.
func TestStreamCancelledGivesSlotBack(t *testing.T) {
	clock, _ := newLimiter(t)
	ev := newEvents()
	conc := slots(t, clock, 1, ev)
	in, err := sluicegrpc.New(sluicegrpc.Config{Calls: admit.Config{Concurrency: conc}})
	require.NoError(t, err)
	c := dial(t, serve(t, in, nil), "")

	ctx, cancel := context.WithCancel(context.Background())
	s, err := c.FullDuplexCall(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = s.Recv()
	require.NoError(t, err)
	ev.next(t, core.Admitted)
	assert.Equal(t, 1, conc.InFlight())

	// The one slot is held: a second stream is shed.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	s2, err := c.FullDuplexCall(ctx2)
	require.NoError(t, err)
	_, err = s2.Recv()
	a := read(err, nil, s2.Trailer())
	assert.Equal(t, codes.Unavailable, a.Code)
	assert.Equal(t, time.Second, a.Retry)
	assert.Equal(t, []string{"1000"}, a.Trailer.Get(sluicegrpc.PushbackKey))

	cancel() // mid-way
	ev.next(t, core.Released)
	assert.Equal(t, 0, conc.InFlight())

	s3, err := c.FullDuplexCall(ctx2)
	require.NoError(t, err)
	require.NoError(t, s3.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = s3.Recv()
	assert.NoError(t, err, "the slot came back")
	require.NoError(t, s3.CloseSend())
	_, err = s3.Recv()
	assert.Error(t, err) // io.EOF: the stream ends
	ev.next(t, core.Released)
	assert.Equal(t, 0, conc.InFlight())
}

// recoverer answers a panicking handler with Internal, as a recovery
// interceptor does, outside sluice's.
func recoverer(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if recover() != nil {
			err = status.Error(codes.Internal, "panic")
		}
	}()
	return h(ctx, req)
}

// A unary call gives its slot back however its handler ends: an answer,
// an error, a panic, a client gone, a deadline passed.
func TestUnarySlotGivenBackOnEveryPath(t *testing.T) {
	clock, _ := newLimiter(t)
	ev := newEvents()
	conc := slots(t, clock, 1, ev)
	in, err := sluicegrpc.New(sluicegrpc.Config{Calls: admit.Config{Concurrency: conc}})
	require.NoError(t, err)
	addr := serve(t, nil, nil, grpc.ChainUnaryInterceptor(recoverer, in.Unary))
	c := dial(t, addr, "")
	call := func(ctx context.Context, msg string, code codes.Code) error {
		_, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{ResponseStatus: &testgrpc.EchoStatus{Code: int32(code), Message: msg}})
		return err
	}
	bg := context.Background()
	assert.NoError(t, call(bg, "", codes.OK))
	assert.Equal(t, codes.NotFound, status.Code(call(bg, "x", codes.NotFound)))
	assert.Equal(t, codes.Internal, status.Code(call(bg, "panic", codes.Unknown)))
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(call(ctx, "wait", codes.Unknown)))
	cancel()
	for conc.InFlight() != 0 { // the server's side of the call past its deadline
		ev.next(t, core.Released)
	}
	ctx, cancel = context.WithCancel(bg)
	done := make(chan error)
	go func() { done <- call(ctx, "wait", codes.Unknown) }()
	for conc.InFlight() != 1 { // until the waiting call holds the slot
		ev.next(t, core.Admitted)
	}
	cancel()
	assert.Equal(t, codes.Canceled, status.Code(<-done))
	for conc.InFlight() != 0 {
		ev.next(t, core.Released)
	}
	assert.NoError(t, call(bg, "", codes.OK))
}

// Refusals carry nothing in the header: grpc-go's retry policy retries
// only trailers-only answers.
func TestRefusalIsTrailersOnly(t *testing.T) {
	_, limiter := newLimiter(t)
	in, err := sluicegrpc.New(sluicegrpc.Config{Calls: admit.Config{Limiter: limiter,
		Rules: []admit.Rule{{Policy: perPeer(), Key: admit.ClientIP()}}}})
	require.NoError(t, err)
	c := dial(t, serve(t, in, nil), "")
	for range 2 {
		unary(t, c, emptyCall, codes.OK)
	}
	var header metadata.MD
	_, err = c.EmptyCall(context.Background(), &testgrpc.Empty{}, grpc.Header(&header))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Empty(t, header.Get("ratelimit"))
}
