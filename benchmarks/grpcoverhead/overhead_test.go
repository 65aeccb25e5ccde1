package grpcoverhead

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/grpc/sluicegrpc"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// The allow path never runs dry (a bucket of 2^40 refilled at 10^6/s); the
// deny path's bucket holds one unit refilled once a day, spent before
// timing starts.
var (
	allowPolicy = core.MustPolicy(core.PolicyConfig{Name: "per-peer", Algorithm: core.GCRA, Quota: 1_000_000, Period: time.Second, Burst: 1 << 40})
	denyPolicy  = core.MustPolicy(core.PolicyConfig{Name: "per-peer", Algorithm: core.GCRA, Quota: 1, Period: 24 * time.Hour, Burst: 1})
)

// sluiceLimit returns sluicegrpc's interceptors limiting each peer by p,
// and, if messages, each peer's stream messages received by p too.
func sluiceLimit(tb testing.TB, p *core.Policy, messages bool) *sluicegrpc.Interceptors {
	s, err := memory.New()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	l, err := core.NewLimiter(s)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := sluicegrpc.Config{Calls: admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: p, Key: admit.ClientIP()}}}}
	if messages {
		mp := core.MustPolicy(core.PolicyConfig{Name: "messages", Algorithm: p.Algorithm(), Quota: p.Quota(), Period: p.Period(), Burst: p.Burst()})
		cfg.Received = &admit.Config{Limiter: l, Rules: []admit.Rule{{Policy: mp, Key: admit.ClientIP()}}}
	}
	in, err := sluicegrpc.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

// peerLimiter is go-grpc-middleware's ratelimit.Limiter as its users write
// it for a per-peer limit: an x/time/rate limiter per peer address, in a
// sync.Map.
type peerLimiter struct {
	limiters sync.Map // netip.Addr -> *rate.Limiter
	r        rate.Limit
	burst    int
}

var errLimited = errors.New("rate limited")

func (p *peerLimiter) Limit(ctx context.Context) error {
	var a netip.Addr
	if pr, ok := peer.FromContext(ctx); ok {
		if t, ok := pr.Addr.(*net.TCPAddr); ok {
			a = t.AddrPort().Addr()
		}
	}
	l, ok := p.limiters.Load(a)
	if !ok {
		l, _ = p.limiters.LoadOrStore(a, rate.NewLimiter(p.r, p.burst))
	}
	if !l.(*rate.Limiter).Allow() {
		return errLimited
	}
	return nil
}

// variant is one server configuration measured.
type variant struct {
	name   string
	unary  grpc.UnaryServerInterceptor  // nil: none
	stream grpc.StreamServerInterceptor // nil: none
	deny   bool                         // the call is refused
}

func variants(tb testing.TB) []variant {
	allow, deny := sluiceLimit(tb, allowPolicy, false), sluiceLimit(tb, denyPolicy, false)
	msgs := sluiceLimit(tb, allowPolicy, true)
	mwAllow := ratelimit.UnaryServerInterceptor(&peerLimiter{r: rate.Inf, burst: 1})
	mwDeny := ratelimit.UnaryServerInterceptor(&peerLimiter{r: 0, burst: 0})
	return []variant{
		{name: "bare"},
		{name: "middleware-allow", unary: mwAllow, stream: ratelimit.StreamServerInterceptor(&peerLimiter{r: rate.Inf, burst: 1})},
		{name: "sluice-allow", unary: allow.Unary, stream: msgs.Stream},
		{name: "middleware-deny", unary: mwDeny, deny: true},
		{name: "sluice-deny", unary: deny.Unary, deny: true},
	}
}

// --- In process: the interceptor alone, with what grpc-go hands it. ---

// transportStream stands for grpc-go's server stream in a call's context:
// it joins the metadata set as grpc-go's does.
type transportStream struct{ header, trailer metadata.MD }

func (s *transportStream) Method() string { return "/grpc.testing.TestService/EmptyCall" }
func (s *transportStream) SetHeader(md metadata.MD) error {
	s.header = metadata.Join(s.header, md)
	return nil
}
func (s *transportStream) SendHeader(md metadata.MD) error { return s.SetHeader(md) }
func (s *transportStream) SetTrailer(md metadata.MD) error {
	s.trailer = metadata.Join(s.trailer, md)
	return nil
}

// callContext is a unary call's context as grpc-go builds it: the peer,
// the incoming metadata of a grpc-go client, the transport stream.
func callContext(ts *transportStream) context.Context {
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(198, 51, 100, 7), Port: 50000}})
	ctx = metadata.NewIncomingContext(ctx, metadata.MD{
		":authority": {"localhost"}, "content-type": {"application/grpc"}, "user-agent": {"grpc-go/1.85.0"},
	})
	return grpc.NewContextWithServerTransportStream(ctx, ts)
}

var (
	emptyInfo = &grpc.UnaryServerInfo{FullMethod: "/grpc.testing.TestService/EmptyCall"}
	empty     = &testgrpc.Empty{}
)

func emptyHandler(context.Context, any) (any, error) { return empty, nil }

// inProcessCall measures one call through v's unary interceptor.
func inProcessCall(v variant) func(b *testing.B) {
	return func(b *testing.B) {
		ts := &transportStream{}
		ctx := callContext(ts)
		if v.deny && v.unary != nil { // spend the allowance first
			_, _ = v.unary(ctx, empty, emptyInfo, emptyHandler)
		}
		b.ReportAllocs()
		for b.Loop() {
			ts.header, ts.trailer = nil, nil
			var err error
			if v.unary == nil {
				_, err = emptyHandler(ctx, empty)
			} else {
				_, err = v.unary(ctx, empty, emptyInfo, emptyHandler)
			}
			if (err != nil) != v.deny {
				b.Fatal(err)
			}
		}
	}
}

// serverStream stands for grpc-go's ServerStream: every RecvMsg receives a
// message at once.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *serverStream) Context() context.Context       { return s.ctx }
func (s *serverStream) RecvMsg(any) error              { return nil }
func (s *serverStream) SetHeader(md metadata.MD) error { return nil }
func (s *serverStream) SetTrailer(md metadata.MD)      {}

var duplexInfo = &grpc.StreamServerInfo{FullMethod: "/grpc.testing.TestService/FullDuplexCall", IsClientStream: true, IsServerStream: true}

// inProcessMessage measures one message received through v's stream
// interceptor, in a stream of b.N messages.
func inProcessMessage(v variant) func(b *testing.B) {
	return func(b *testing.B) {
		ss := &serverStream{ctx: callContext(&transportStream{})}
		handler := func(_ any, s grpc.ServerStream) error {
			b.ReportAllocs()
			b.ResetTimer()
			var m testgrpc.StreamingOutputCallRequest
			for b.Loop() {
				if err := s.RecvMsg(&m); err != nil {
					return err
				}
			}
			return nil
		}
		var err error
		if v.stream == nil {
			err = handler(nil, ss)
		} else {
			err = v.stream(nil, ss, duplexInfo, handler)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// --- Over loopback: a real grpc-go client and server. ---

type service struct {
	testgrpc.UnimplementedTestServiceServer
}

func (service) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return empty, nil
}

func (service) FullDuplexCall(s testgrpc.TestService_FullDuplexCallServer) error {
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.Send(&testgrpc.StreamingOutputCallResponse{Payload: m.GetPayload()}); err != nil {
			return err
		}
	}
}

// loopback serves the test service behind v's interceptors and returns a
// client of it.
func loopback(tb testing.TB, v variant) testgrpc.TestServiceClient {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var opts []grpc.ServerOption
	if v.unary != nil {
		opts = append(opts, grpc.UnaryInterceptor(v.unary))
	}
	if v.stream != nil {
		opts = append(opts, grpc.StreamInterceptor(v.stream))
	}
	srv := grpc.NewServer(opts...)
	testgrpc.RegisterTestServiceServer(srv, service{})
	go func() { _ = srv.Serve(lis) }()
	tb.Cleanup(srv.Stop)
	cc, err := grpc.NewClient("passthrough:///"+lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cc.Close() })
	return testgrpc.NewTestServiceClient(cc)
}

func loopbackCall(c testgrpc.TestServiceClient, v variant) func(b *testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.EmptyCall(ctx, empty); (err != nil) != v.deny {
				b.Fatal(err)
			}
		}
	}
}

func loopbackMessage(c testgrpc.TestServiceClient) func(b *testing.B) {
	return func(b *testing.B) {
		s, err := c.FullDuplexCall(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		m := &testgrpc.StreamingOutputCallRequest{}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := s.Send(m); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Recv(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		_ = s.CloseSend()
		_, _ = s.Recv()
	}
}

// cases are the measurements, by name ("in-process/call/sluice-allow").
func cases(tb testing.TB) (names []string, fns map[string]func(*testing.B)) {
	fns = map[string]func(*testing.B){}
	add := func(name string, f func(*testing.B)) {
		names = append(names, name)
		fns[name] = f
	}
	for _, v := range variants(tb) {
		add("in-process/call/"+v.name, inProcessCall(v))
	}
	for _, v := range variants(tb) {
		if !v.deny {
			add("in-process/message/"+v.name, inProcessMessage(v))
		}
	}
	for _, v := range variants(tb) {
		c := loopback(tb, v)
		if v.deny { // spend the allowance first
			_, _ = c.EmptyCall(context.Background(), empty)
		}
		add("loopback/call/"+v.name, loopbackCall(c, v))
		if !v.deny {
			add("loopback/message/"+v.name, loopbackMessage(c))
		}
	}
	return names, fns
}

// BenchmarkOverhead runs each case once; TestOverheadTable interleaves
// rounds of them.
func BenchmarkOverhead(b *testing.B) {
	names, fns := cases(b)
	for _, n := range names {
		b.Run(n, fns[n])
	}
}

// TestOverheadTable runs rounds of every case, interleaved, and prints
// each case's median ns/op, its ratio to the bare server's, and its
// allocations. It runs only with SLUICE_OVERHEAD=1 (rounds: SLUICE_ROUNDS,
// default 5).
func TestOverheadTable(t *testing.T) {
	if os.Getenv("SLUICE_OVERHEAD") == "" {
		t.Skip("set SLUICE_OVERHEAD=1 to measure")
	}
	rounds := 5
	if r := os.Getenv("SLUICE_ROUNDS"); r != "" {
		_, _ = fmt.Sscan(r, &rounds)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	names, fns := cases(t)
	ns := map[string][]float64{}
	allocs, bytes := map[string]int64{}, map[string]int64{}
	for range rounds {
		for _, n := range names {
			r := testing.Benchmark(fns[n])
			ns[n] = append(ns[n], float64(r.T.Nanoseconds())/float64(r.N))
			allocs[n], bytes[n] = r.AllocsPerOp(), r.AllocedBytesPerOp()
		}
	}
	after, _ := os.ReadFile("/proc/loadavg")
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d interleaved rounds; load before %s, after %s\n", rounds, strings.TrimSpace(string(load)), strings.TrimSpace(string(after)))
	fmt.Fprintf(&b, "| case | ns/op (median) | vs bare | allocs/op | B/op |\n|---|---:|---:|---:|---:|\n")
	for _, n := range names {
		base := n[:strings.LastIndexByte(n, '/')] + "/bare"
		m, mb := median(ns[n]), median(ns[base])
		fmt.Fprintf(&b, "| %s | %.0f | %.2fx (+%.0f ns) | %d | %d |\n", n, m, m/mb, m-mb, allocs[n], bytes[n])
	}
	t.Log(b.String())
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkInProcess is the interceptors alone, with no server: for
// instruction counts (callgrind), which loopback's goroutines would blur.
func BenchmarkInProcess(b *testing.B) {
	for _, v := range variants(b) {
		b.Run("call/"+v.name, inProcessCall(v))
		if !v.deny {
			b.Run("message/"+v.name, inProcessMessage(v))
		}
	}
}
