// Command grpc serves grpc-go's test service behind sluicegrpc's
// interceptors, then calls it to show each limit at work: a per-API-key
// tier (x-api-key metadata: "free" keys 3 calls a minute, the "pro" key
// 100), a per-peer limit (20 calls a minute per client address), a
// per-message limit on streams (5 messages a minute per client), a
// concurrency limit (2 calls in flight, the next one shed), and UnaryCall
// limited to one a second per client, with a client that retries a
// refused call after the server's push-back (sluicegrpc's client
// interceptor).
//
//	go run ./examples/grpc
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/grpc/sluicegrpc"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/store/memory"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// The service's limits.
var (
	free     = core.MustPolicy(core.PolicyConfig{Name: "free", Algorithm: core.GCRA, Quota: 3, Period: time.Minute, Burst: 3})
	pro      = core.MustPolicy(core.PolicyConfig{Name: "pro", Algorithm: core.GCRA, Quota: 100, Period: time.Minute, Burst: 100})
	perPeer  = core.MustPolicy(core.PolicyConfig{Name: "per-peer", Algorithm: core.GCRA, Quota: 20, Period: time.Minute, Burst: 20})
	unary    = core.MustPolicy(core.PolicyConfig{Name: "unary", Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 1})
	messages = core.MustPolicy(core.PolicyConfig{Name: "messages", Algorithm: core.GCRA, Quota: 5, Period: time.Minute, Burst: 5})
	plans    = map[string]*core.Policy{"pro-key": pro} // the accounts database
)

// interceptors builds the server's limits on one memory store.
func interceptors() (*sluicegrpc.Interceptors, error) {
	store, err := memory.New()
	if err != nil {
		return nil, err
	}
	limiter, err := core.NewLimiter(store)
	if err != nil {
		return nil, err
	}
	slots, err := backpressure.New(backpressure.Config{Name: "in-flight", Controller: backpressure.Static(2)})
	if err != nil {
		return nil, err
	}
	return sluicegrpc.New(sluicegrpc.Config{
		Calls: admit.Config{
			Limiter: limiter,
			Rules: []admit.Rule{
				{Policies: []*core.Policy{free, pro}, Key: admit.Header("X-API-Key"), Select: func(r *admit.Request) (*core.Policy, error) {
					if p, ok := plans[r.Header("X-API-Key")]; ok {
						return p, nil
					}
					return free, nil
				}},
				{Policy: perPeer, Key: admit.ClientIP()},
				{Policy: unary, Key: admit.ClientIP(), Routes: []string{testgrpc.TestService_UnaryCall_FullMethodName}},
			},
			Concurrency: slots,
		},
		Received: &admit.Config{Limiter: limiter, Rules: []admit.Rule{
			{Policy: messages, Key: admit.ClientIP(), Routes: []string{"/grpc.testing.TestService/*"}},
		}},
	})
}

// service is the test service: EmptyCall and UnaryCall answer at once,
// FullDuplexCall echoes until the client closes.
type service struct {
	testgrpc.UnimplementedTestServiceServer
}

func (service) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

func (service) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{}, nil
}

func (service) FullDuplexCall(s testgrpc.TestService_FullDuplexCallServer) error {
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err // a refused message ends the stream with its refusal
		}
		if err := s.Send(&testgrpc.StreamingOutputCallResponse{Payload: m.GetPayload()}); err != nil {
			return err
		}
	}
}

// run serves on loopback and shows each limit, writing what the clients
// see to w.
func run(w io.Writer) error {
	in, err := interceptors()
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(in.Unary), grpc.ChainStreamInterceptor(in.Stream))
	testgrpc.RegisterTestServiceServer(srv, service{})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	addr := lis.Addr().String()
	ctx := context.Background()

	// Tiers: the API key's plan chooses the limit.
	c, closeConn, err := dial(addr, "127.0.0.2")
	if err != nil {
		return err
	}
	defer closeConn()
	for _, key := range []string{"free-key", "pro-key"} {
		fmt.Fprintf(w, "%-8s", key)
		for range 4 {
			var header, trailer metadata.MD
			_, err := c.EmptyCall(metadata.AppendToOutgoingContext(ctx, "x-api-key", key), &testgrpc.Empty{}, grpc.Header(&header), grpc.Trailer(&trailer))
			fmt.Fprintf(w, " %s", describe(err, header, trailer))
		}
		fmt.Fprintln(w)
	}

	// Per peer: another address, 22 calls, the last two refused.
	c3, close3, err := dial(addr, "127.0.0.3")
	if err != nil {
		return err
	}
	defer close3()
	refused := 0
	for range 22 {
		if _, err := c3.EmptyCall(ctx, &testgrpc.Empty{}); err != nil {
			refused++
		}
	}
	fmt.Fprintf(w, "per-peer: 22 calls, %d refused\n", refused)

	// Per message: a stream sends 7 messages; the 6th is over the rate.
	c4, close4, err := dial(addr, "127.0.0.4")
	if err != nil {
		return err
	}
	defer close4()
	s, err := c4.FullDuplexCall(ctx)
	if err != nil {
		return err
	}
	for i := 1; i <= 7; i++ {
		if err := s.Send(&testgrpc.StreamingOutputCallRequest{}); err != nil {
			break // the stream has ended
		}
		if _, err := s.Recv(); err != nil {
			fmt.Fprintf(w, "stream: message %d %s\n", i, describe(err, nil, s.Trailer()))
			break
		}
	}

	// Concurrency: two streams held open, the third call shed; one closed,
	// a call gets its slot.
	c5, close5, err := dial(addr, "127.0.0.5")
	if err != nil {
		return err
	}
	defer close5()
	var held []testgrpc.TestService_FullDuplexCallClient
	for range 2 {
		s, err := c5.FullDuplexCall(ctx)
		if err != nil {
			return err
		}
		if err := s.Send(&testgrpc.StreamingOutputCallRequest{}); err != nil {
			return err
		}
		if _, err := s.Recv(); err != nil { // its handler runs: it holds its slot
			return err
		}
		held = append(held, s)
	}
	var trailer metadata.MD
	_, err = c5.EmptyCall(ctx, &testgrpc.Empty{}, grpc.Trailer(&trailer))
	fmt.Fprintf(w, "concurrency: a third call %s\n", describe(err, nil, trailer))
	for _, s := range held[:1] {
		_ = s.CloseSend()
		if _, err := s.Recv(); !errors.Is(err, io.EOF) {
			return fmt.Errorf("the stream ends: %w", err)
		}
	}
	_, err = c5.EmptyCall(ctx, &testgrpc.Empty{})
	fmt.Fprintf(w, "concurrency: once one ended %s\n", describe(err, nil, nil))
	_ = held[1].CloseSend()
	_, _ = held[1].Recv()

	// Push-back: another client spends this address's UnaryCall allowance;
	// sluice's client is refused, waits the push-back, and retries.
	retrying, err := sluicegrpc.NewClient(sluicegrpc.ClientConfig{Methods: []string{testgrpc.TestService_UnaryCall_FullMethodName}})
	if err != nil {
		return err
	}
	c6, close6, err := dial(addr, "127.0.0.6")
	if err != nil {
		return err
	}
	defer close6()
	if _, err := c6.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
		return err
	}
	c7, close7, err := dial(addr, "127.0.0.6", grpc.WithUnaryInterceptor(retrying.Unary))
	if err != nil {
		return err
	}
	defer close7()
	start := time.Now()
	_, err = c7.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	fmt.Fprintf(w, "retry: %s, after the push-back: %v\n", describe(err, nil, nil), time.Since(start) >= time.Second)
	return nil
}

// dial returns a client of addr whose connections come from the loopback
// address from, and its close.
func dial(addr, from string, opts ...grpc.DialOption) (testgrpc.TestServiceClient, func(), error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return d.DialContext(ctx, "tcp", a) }))
	cc, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		return nil, nil, err
	}
	return testgrpc.NewTestServiceClient(cc), func() { _ = cc.Close() }, nil
}

// describe writes what a client saw: OK, or the code, RetryInfo's delay
// and the push-back; and the RateLimit field.
func describe(err error, header, trailer metadata.MD) string {
	if err == nil {
		return "OK"
	}
	st := status.Convert(err)
	out := st.Code().String()
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			out += fmt.Sprintf("(retry in %v", ri.GetRetryDelay().AsDuration())
			if pb := trailer.Get(sluicegrpc.PushbackKey); len(pb) > 0 {
				out += ", push-back " + pb[0] + "ms"
			}
			out += ")"
		}
	}
	return out
}
