package sluicegrpc_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/sluice/adapters/grpc/sluicegrpc"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
)

// The test service's methods.
const (
	emptyCall  = testgrpc.TestService_EmptyCall_FullMethodName
	unaryCall  = testgrpc.TestService_UnaryCall_FullMethodName
	duplexCall = testgrpc.TestService_FullDuplexCall_FullMethodName
	inputCall  = testgrpc.TestService_StreamingInputCall_FullMethodName
)

// epoch is the manual clock's start, a boundary of every window.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// newLimiter returns a manual clock and a limiter on a memory store on it.
func newLimiter(t testing.TB, opts ...core.Option) (*sluicetest.ManualClock, *core.Limiter) {
	clock := sluicetest.NewManualClock(epoch)
	s, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	l, err := core.NewLimiter(s, opts...)
	require.NoError(t, err)
	return clock, l
}

// service is the test service: EmptyCall answers at once; UnaryCall
// answers with the status its request's ResponseStatus asks for, works
// until its context ends if the message is "wait", and panics if it is
// "panic"; FullDuplexCall echoes every message until the client closes;
// StreamingInputCall counts the messages until the client closes.
type service struct {
	testgrpc.UnimplementedTestServiceServer
	started chan string // if not nil, gets each stream's method as its handler starts
}

func (s *service) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

func (s *service) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if st := req.GetResponseStatus(); st != nil {
		switch st.GetMessage() {
		case "wait":
			<-ctx.Done()
			return nil, status.FromContextError(ctx.Err()).Err()
		case "panic":
			panic("the handler panics")
		}
		if st.GetCode() != 0 {
			return nil, status.Error(codes.Code(st.GetCode()), st.GetMessage())
		}
	}
	return &testgrpc.SimpleResponse{}, nil
}

func (s *service) CacheableUnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return s.UnaryCall(ctx, req)
}

func (s *service) FullDuplexCall(stream testgrpc.TestService_FullDuplexCallServer) error {
	if s.started != nil {
		s.started <- duplexCall
	}
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&testgrpc.StreamingOutputCallResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
	}
}

func (s *service) StreamingInputCall(stream testgrpc.TestService_StreamingInputCallServer) error {
	n := 0
	for {
		_, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&testgrpc.StreamingInputCallResponse{AggregatedPayloadSize: int32(n)})
		}
		if err != nil {
			return err
		}
		n++
	}
}

// serve starts a gRPC server on loopback with in's interceptors in front
// of svc (a fresh service if nil), stopped when the test ends, and returns
// its address.
func serve(t testing.TB, in *sluicegrpc.Interceptors, svc *service, opts ...grpc.ServerOption) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	if in != nil {
		opts = append(opts, grpc.ChainUnaryInterceptor(in.Unary), grpc.ChainStreamInterceptor(in.Stream))
	}
	srv := grpc.NewServer(opts...)
	if svc == nil {
		svc = &service{}
	}
	testgrpc.RegisterTestServiceServer(srv, svc)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// dial returns a client of the test service at addr, whose connections
// come from the loopback address from ("127.0.0.1" if empty), closed when
// the test ends.
func dial(t testing.TB, addr, from string, opts ...grpc.DialOption) testgrpc.TestServiceClient {
	return testgrpc.NewTestServiceClient(conn(t, addr, from, opts...))
}

func conn(t testing.TB, addr, from string, opts ...grpc.DialOption) *grpc.ClientConn {
	if from == "" {
		from = "127.0.0.1"
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	opts = append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return d.DialContext(ctx, "tcp", a) }),
	}, opts...)
	cc, err := grpc.NewClient("passthrough:///"+addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// answer is what a client saw of a call: its code, message, retry delay
// (RetryInfo), and metadata.
type answer struct {
	Code    codes.Code
	Retry   time.Duration // RetryInfo's delay, -1 if none
	Header  metadata.MD
	Trailer metadata.MD
}

// get returns the first value of key in the header or else the trailer.
func (a answer) get(key string) string {
	if v := a.Header.Get(key); len(v) > 0 {
		return strings.Join(v, ", ")
	}
	return strings.Join(a.Trailer.Get(key), ", ")
}

// read reads a call's error and metadata into an answer.
func read(err error, header, trailer metadata.MD) answer {
	a := answer{Code: status.Code(err), Retry: -1, Header: header, Trailer: trailer}
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			a.Retry = ri.GetRetryDelay().AsDuration()
		}
	}
	return a
}

// unary calls method (emptyCall or unaryCall) with metadata kv, and the
// status code a UnaryCall's handler answers with (codes.OK: none).
func unary(t testing.TB, c testgrpc.TestServiceClient, method string, code codes.Code, kv ...string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, kv...)
	var header, trailer metadata.MD
	var err error
	if method == emptyCall {
		_, err = c.EmptyCall(ctx, &testgrpc.Empty{}, grpc.Header(&header), grpc.Trailer(&trailer))
	} else {
		req := &testgrpc.SimpleRequest{}
		if code != codes.OK {
			req.ResponseStatus = &testgrpc.EchoStatus{Code: int32(code), Message: "status"}
		}
		_, err = c.UnaryCall(ctx, req, grpc.Header(&header), grpc.Trailer(&trailer))
	}
	return read(err, header, trailer)
}
