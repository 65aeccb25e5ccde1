package sluicegrpc

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/sluice/adapters/admit"
)

// Config configures the interceptors New builds: the limits of calls, and
// of the messages of streams.
type Config struct {
	// Calls limits calls: each unary call, and each stream once, when it
	// starts. Its rules' Routes list method patterns: a full method
	// ("/pkg.Service/Method") or a whole service ("/pkg.Service/*"). A
	// stream holds its slot of Calls.Concurrency until its handler returns.
	Calls admit.Config
	// Received, if set, limits the messages clients send on streams: each
	// message the handler receives is decided as a call of its own, and one
	// refused fails RecvMsg with the refusal, which the handler returns.
	// It takes no Concurrency, Estimates or Charge: a message holds nothing
	// once received.
	Received *admit.Config
	// Sent, if set, limits the messages the server sends on streams, as
	// Received does: a message refused is not sent, and SendMsg fails with
	// the refusal.
	Sent *admit.Config
}

// Interceptors are the unary and stream server interceptors of a Config.
// They are safe for concurrent use.
type Interceptors struct {
	calls    *limit
	received *limit // nil if Config.Received is
	sent     *limit // nil if Config.Sent is
}

// limit is one engine, with the pooled calls it decides.
type limit struct {
	e     *admit.Engine
	calls sync.Pool // *call
	// refusals caches the standard refusals' errors by code and whole
	// seconds of delay: a status error is immutable, and gRPC only reads it.
	refusals [3][64]atomic.Pointer[error]
}

// New validates cfg and builds its interceptors. A nil Deny or OnError
// answers with the bare status: ResourceExhausted for a call the rules
// refuse, Unavailable for one shed, Internal when no decision could be made.
func New(cfg Config) (*Interceptors, error) {
	calls, err := newLimit(cfg.Calls, "Calls")
	if err != nil {
		return nil, err
	}
	in := &Interceptors{calls: calls}
	if cfg.Received != nil {
		if in.received, err = newMessageLimit(*cfg.Received, "Received"); err != nil {
			return nil, err
		}
	}
	if cfg.Sent != nil {
		if in.sent, err = newMessageLimit(*cfg.Sent, "Sent"); err != nil {
			return nil, err
		}
	}
	return in, nil
}

func newLimit(cfg admit.Config, what string) (*limit, error) {
	cfg, err := routed(cfg, what)
	if err != nil {
		return nil, err
	}
	e, err := admit.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("sluicegrpc: %s: %w", what, err)
	}
	return &limit{e: e}, nil
}

// newMessageLimit is newLimit for the messages of streams, which refuses
// what a message cannot hold.
func newMessageLimit(cfg admit.Config, what string) (*limit, error) {
	switch {
	case cfg.Concurrency != nil:
		return nil, fmt.Errorf("sluicegrpc: %s.Concurrency: a message holds no slot; bound streams with Calls.Concurrency", what)
	case cfg.Estimates:
		return nil, fmt.Errorf("sluicegrpc: %s.Estimates: a message has no handler to reconcile a reservation", what)
	}
	for i, r := range cfg.Rules {
		if r.Charge != nil {
			return nil, fmt.Errorf("sluicegrpc: %s.Rules[%d].Charge: a message has no status to charge by", what, i)
		}
	}
	return newLimit(cfg, what)
}

// decide decides a call, or a message, of method under ctx. It returns the
// Verdict, and the call holding the fields set, which the caller sends as
// metadata and puts back with done; on a refusal, the error to fail with,
// and the fields to send as trailer metadata, push-back included.
func (l *limit) decide(ctx context.Context, method string) (admit.Verdict, *call, error) {
	c, _ := l.calls.Get().(*call)
	if c == nil {
		c = new(call)
	}
	c.reset(ctx, method)
	v := l.e.Decide(c, c)
	if v.Proceed {
		return v, c, nil
	}
	retry := c.retryAfter()
	if ms := retry.Milliseconds(); ms > 0 {
		c.SetHeader(pushbackName, strconv.FormatInt(ms, 10))
	}
	return v, c, l.refusal(c, retry)
}

// done puts c back, for another call.
func (l *limit) done(c *call) {
	c.release()
	l.calls.Put(c)
}

// retryAfter returns the Retry-After the engine set, 0 if none.
func (c *call) retryAfter() time.Duration {
	s, err := strconv.ParseInt(c.ResponseHeader("Retry-After"), 10, 64)
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// Unary is the grpc.UnaryServerInterceptor of Config.Calls.
func (in *Interceptors) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	l := in.calls
	v, c, err := l.decide(ctx, info.FullMethod)
	if err != nil {
		_ = grpc.SetTrailer(ctx, c.metadata()) // fails only if the call is done
		l.done(c)
		return nil, err
	}
	ctx = v.Context(ctx)
	if v.Settlement == nil {
		_ = grpc.SetHeader(ctx, c.metadata()) // fails only if the call is done
		l.done(c)
		return handler(ctx, req)
	}
	// The fields go with the response, as the call's status leaves them
	// (Settlement.SetFields): in the header, or in the trailer if the
	// handler has sent the header.
	st := 0 // stays 0 if the handler panics
	defer func() {
		if st != 0 {
			v.Settlement.SetFields(st, c)
			if md := c.metadata(); grpc.SetHeader(ctx, md) != nil {
				_ = grpc.SetTrailer(ctx, md)
			}
		}
		l.done(c)
		v.Settlement.Settle(st)
	}()
	resp, err = handler(ctx, req)
	st = HTTPStatus(status.Code(err))
	return resp, err
}

// Stream is the grpc.StreamServerInterceptor of Config.Calls, Received and
// Sent.
func (in *Interceptors) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := ss.Context()
	l := in.calls
	v, c, err := l.decide(ctx, info.FullMethod)
	if err != nil {
		ss.SetTrailer(c.metadata())
		l.done(c)
		return err
	}
	_ = ss.SetHeader(c.metadata()) // fails only if the header is sent
	l.done(c)
	if v.Reservation != nil || in.received != nil || in.sent != nil {
		ss = &stream{ServerStream: ss, in: in, ctx: v.Context(ctx), method: info.FullMethod}
	}
	if v.Settlement == nil {
		return handler(srv, ss)
	}
	st := 0 // stays 0 if the handler panics
	defer func() { v.Settlement.Settle(st) }()
	err = handler(srv, ss)
	st = HTTPStatus(status.Code(err))
	return err
}

// stream is a ServerStream whose messages are decided, and whose context
// carries the stream's reservation.
type stream struct {
	grpc.ServerStream
	in     *Interceptors
	ctx    context.Context
	method string
}

func (s *stream) Context() context.Context { return s.ctx }

// RecvMsg receives a message, and decides it under Config.Received.
func (s *stream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil || s.in.received == nil {
		return err
	}
	return s.message(s.in.received)
}

// SendMsg decides a message under Config.Sent, and sends it if allowed.
func (s *stream) SendMsg(m any) error {
	if s.in.sent != nil {
		if err := s.message(s.in.sent); err != nil {
			return err
		}
	}
	return s.ServerStream.SendMsg(m)
}

// message decides a message under l: a refusal's fields go in the trailer,
// an allowed message's nowhere (the header has gone with the first).
func (s *stream) message(l *limit) error {
	_, c, err := l.decide(s.ctx, s.method)
	if err != nil {
		s.ServerStream.SetTrailer(c.metadata())
	}
	l.done(c)
	return err
}
