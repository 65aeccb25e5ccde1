package sluicegrpc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/grpc/sluicegrpc"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
)

// The conformance run's methods, the service they belong to, and the
// peers calls come from (the last a trusted proxy).
var (
	diffMethods = []string{emptyCall, unaryCall, testgrpc.TestService_CacheableUnaryCall_FullMethodName}
	diffService = "/grpc.testing.TestService/*"
	diffPeers   = []string{"127.0.0.2", "127.0.0.3", "127.0.0.9"}
)

// diffConfig is the conformance run's Config over limiter, its method
// patterns as gRPC writes them: layered rules of every algorithm family,
// keyed by client address (behind a trusted proxy too), API key with a
// plan chosen per call, method and a constant; rules restricted to a
// method and to a whole service; a rule that charges by status.
func diffConfig(limiter *core.Limiter, clock core.Clock, headers string) admit.Config {
	pol := func(name string, alg core.Algorithm, quota int64, period time.Duration, burst int64) *core.Policy {
		return core.MustPolicy(core.PolicyConfig{Name: name, Algorithm: alg, Quota: quota, Period: period, Burst: burst})
	}
	free := pol("free", core.TokenBucket, 3, time.Second, 3)
	pro := pol("pro", core.FixedWindow, 10, 5*time.Second, 0)
	return admit.Config{
		Limiter: limiter, Clock: clock, Headers: headers,
		TrustedProxies: []string{"127.0.0.9"},
		Rules: []admit.Rule{
			{Policy: pol("per-ip", core.GCRA, 6, 2*time.Second, 6), Key: admit.ClientIP()},
			{Policies: []*core.Policy{free, pro}, Key: admit.Header("X-API-Key"), Select: func(r *admit.Request) (*core.Policy, error) {
				if r.Header("X-API-Key") == "pro-key" {
					return pro, nil
				}
				return free, nil
			}},
			{Policy: pol("unary", core.SlidingLog, 2, 3*time.Second, 0), Key: admit.Join(admit.ClientIP(), admit.Route()), Routes: []string{unaryCall}},
			{Policy: pol("service", core.LeakyBucket, 8, 4*time.Second, 4), Key: admit.Const("svc"), Routes: []string{diffService}},
			{Policy: pol("failures", core.GCRA, 2, 4*time.Second, 2), Key: admit.ClientIP(), Routes: []string{unaryCall},
				Charge: func(status int) bool { return status >= 400 }},
		},
	}
}

// httpRoutes writes a gRPC Config's method patterns as the ServeMux
// routes of the same calls made over HTTP ("POST /pkg.Service/Method"):
// a whole service is the list of its methods.
func httpRoutes(cfg admit.Config) admit.Config {
	rules := make([]admit.Rule, len(cfg.Rules))
	for i, r := range cfg.Rules {
		var routes []string
		for _, m := range r.Routes {
			if m == diffService {
				routes = append(routes, diffMethods...)
			} else {
				routes = append(routes, m)
			}
		}
		r.Routes = routes
		rules[i] = r
	}
	cfg.Rules = rules
	return cfg
}

// diffStep is one call of the run.
type diffStep struct {
	advance   time.Duration
	peer      int
	method    string
	apiKey    string
	forwarded string
	status    int // the handler's answer
}

func randomStep(rng *rand.Rand) diffStep {
	advances := []time.Duration{0, 0, 0, 10 * time.Millisecond, 100 * time.Millisecond, 700 * time.Millisecond, 1300 * time.Millisecond}
	keys := []string{"", "key-1", "key-2", "pro-key"}
	forwarded := []string{"", "", "203.0.113.5", "203.0.113.6"}
	statuses := []int{200, 200, 200, 403, 500}
	return diffStep{
		advance:   advances[rng.IntN(len(advances))],
		peer:      rng.IntN(len(diffPeers)),
		method:    diffMethods[rng.IntN(len(diffMethods))],
		apiKey:    keys[rng.IntN(len(keys))],
		forwarded: forwarded[rng.IntN(len(forwarded))],
		status:    statuses[rng.IntN(len(statuses))],
	}
}

// outcome is what a client was told: "allowed", or the refusal's code, and
// the rate-limit fields, Retry-After among them.
type outcome struct {
	result string
	fields map[string]string
}

var diffFields = []string{"ratelimit", "ratelimit-policy", "retry-after", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset",
	"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"}

func (o outcome) String() string {
	var b strings.Builder
	b.WriteString(o.result)
	for _, k := range diffFields {
		if v, ok := o.fields[k]; ok {
			fmt.Fprintf(&b, " %s=%q", k, v)
		}
	}
	return b.String()
}

// diffSides are the same Config served over HTTP by sluicehttp and over
// gRPC by sluicegrpc, each on a store of its own on one clock.
type diffSides struct {
	http  []*http.Client // per peer
	url   string
	grpc  []testgrpc.TestServiceClient
	clock *sluicetest.ManualClock
}

func newDiffSides(t *testing.T, headers string, store func(t *testing.T, clock core.Clock) core.Store) *diffSides {
	clock := sluicetest.NewManualClock(epoch)
	limiter := func() *core.Limiter {
		l, err := core.NewLimiter(store(t, clock))
		require.NoError(t, err)
		return l
	}
	// HTTP: a ServeMux of the same methods, its handler answering the
	// status X-Status asks for.
	mux := http.NewServeMux()
	for _, m := range diffMethods {
		mux.HandleFunc("POST "+m, func(w http.ResponseWriter, r *http.Request) {
			st, _ := strconv.Atoi(r.Header.Get("X-Status"))
			w.WriteHeader(st)
		})
	}
	mw, err := sluicehttp.New(httpRoutes(diffConfig(limiter(), clock, headers)))
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: mw(mux)}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })

	in, err := sluicegrpc.New(sluicegrpc.Config{Calls: diffConfig(limiter(), clock, headers)})
	require.NoError(t, err)
	addr := serve(t, in, nil)

	s := &diffSides{url: "http://" + lis.Addr().String(), clock: clock}
	for _, p := range diffPeers {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(p)}}
		tr := &http.Transport{DialContext: d.DialContext}
		t.Cleanup(tr.CloseIdleConnections)
		s.http = append(s.http, &http.Client{Transport: tr})
		s.grpc = append(s.grpc, dial(t, addr, p))
	}
	return s
}

func (s *diffSides) viaHTTP(t *testing.T, st diffStep) outcome {
	req, err := http.NewRequest(http.MethodPost, s.url+st.method, nil)
	require.NoError(t, err)
	req.Header.Set("X-Status", strconv.Itoa(st.status))
	if st.apiKey != "" {
		req.Header.Set("X-API-Key", st.apiKey)
	}
	if st.forwarded != "" {
		req.Header.Set("X-Forwarded-For", st.forwarded)
	}
	resp, err := s.http[st.peer].Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	o := outcome{result: "allowed", fields: map[string]string{}}
	switch resp.StatusCode {
	case 200, 403, 500:
		if resp.StatusCode != st.status {
			o.result = "http " + resp.Status
		}
	case 429:
		o.result = codes.ResourceExhausted.String()
	case 503:
		o.result = codes.Unavailable.String()
	default:
		o.result = "http " + resp.Status
	}
	for _, k := range diffFields {
		if v := resp.Header.Values(k); len(v) > 0 {
			o.fields[k] = strings.Join(v, ", ")
		}
	}
	return o
}

func (s *diffSides) viaGRPC(t *testing.T, st diffStep) outcome {
	kv := []string{}
	if st.apiKey != "" {
		kv = append(kv, "x-api-key", st.apiKey)
	}
	if st.forwarded != "" {
		kv = append(kv, "x-forwarded-for", st.forwarded)
	}
	code := codes.OK
	switch st.status {
	case 403:
		code = codes.PermissionDenied
	case 500:
		code = codes.Internal
	}
	var a answer
	if st.method == emptyCall {
		a = unary(t, s.grpc[st.peer], emptyCall, code, kv...)
		if code != codes.OK && a.Code == codes.OK {
			a.Code = code // EmptyCall answers OK whatever the step asks: as HTTP's handler answers
		}
	} else {
		ctx := metadata.AppendToOutgoingContext(context.Background(), kv...)
		var header, trailer metadata.MD
		req := &testgrpc.SimpleRequest{}
		if code != codes.OK {
			req.ResponseStatus = &testgrpc.EchoStatus{Code: int32(code), Message: "status"}
		}
		var err error
		if st.method == unaryCall {
			_, err = s.grpc[st.peer].UnaryCall(ctx, req, grpc.Header(&header), grpc.Trailer(&trailer))
		} else {
			_, err = s.grpc[st.peer].CacheableUnaryCall(ctx, req, grpc.Header(&header), grpc.Trailer(&trailer))
		}
		a = read(err, header, trailer)
	}
	o := outcome{result: "allowed", fields: map[string]string{}}
	if a.Code != code {
		o.result = a.Code.String()
	}
	for _, k := range diffFields {
		if v := a.get(k); v != "" {
			o.fields[k] = v
		}
	}
	// A refusal's RetryInfo and push-back say what Retry-After says.
	if ra, ok := o.fields["retry-after"]; ok {
		secs, _ := strconv.Atoi(ra)
		if a.Retry != time.Duration(secs)*time.Second || a.get(sluicegrpc.PushbackKey) != strconv.Itoa(secs*1000) {
			o.result += fmt.Sprintf(" (RetryInfo %v, push-back %q)", a.Retry, a.get(sluicegrpc.PushbackKey))
		}
	}
	return o
}

// runDiff runs n random steps through both sides and reports the
// mismatches, failing the test if there is any.
func runDiff(t *testing.T, n int, seed uint64, headers string, store func(t *testing.T, clock core.Clock) core.Store) {
	s := newDiffSides(t, headers, store)
	rng := rand.New(rand.NewPCG(seed, seed))
	mismatches := 0
	results := map[string]int{}
	for i := range n {
		st := randomStep(rng)
		s.clock.Advance(st.advance)
		h, g := s.viaHTTP(t, st), s.viaGRPC(t, st)
		results[h.result]++
		if h.String() != g.String() {
			mismatches++
			if mismatches <= 10 {
				t.Errorf("step %d %+v:\n http %s\n grpc %s", i, st, h, g)
			}
		}
	}
	t.Logf("%d steps (seed %d, %s fields): %v; %d mismatches", n, seed, headers, results, mismatches)
	require.Zero(t, mismatches)
	require.Greater(t, results[codes.ResourceExhausted.String()], n/20, "the run refuses calls")
	require.Greater(t, results["allowed"], n/5, "the run allows calls")
}

func memoryStore(t *testing.T, clock core.Clock) core.Store {
	s, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// The same calls through sluicehttp and sluicegrpc, with the same Config
// on the same clock, get the same decisions and the same field values:
// on a memory store, in each header style.
func TestConformanceMemory(t *testing.T) {
	steps := 3000
	if testing.Short() {
		steps = 300
	}
	for _, headers := range []string{"ietf", "draft", "legacy"} {
		t.Run(headers, func(t *testing.T) { runDiff(t, steps, 1+uint64(len(headers)), headers, memoryStore) })
	}
}
