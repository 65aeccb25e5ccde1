// Package sluicegrpc is sluice's gRPC adapter: unary and stream server
// interceptors over the engine the HTTP adapters use (package admit), with
// the same rules, stores, layering, costs, concurrency limits and
// observer; and a client interceptor that paces, breaks and retries.
//
//	lim, err := sluicegrpc.New(sluicegrpc.Config{
//		Calls: admit.Config{Limiter: limiter, Rules: []admit.Rule{
//			{Policy: perPeer, Key: admit.ClientIP()},
//			{Policy: perKey, Key: admit.Header("X-API-Key"), Routes: []string{"/shop.Orders/*"}},
//		}},
//		Received: &admit.Config{Limiter: limiter, Rules: []admit.Rule{{Policy: perMessage, Key: admit.ClientIP()}}},
//	})
//	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(lim.Unary), grpc.ChainStreamInterceptor(lim.Stream))
//
// A call is seen as the engine's request: its incoming metadata are the
// header (keys lower-case; X-Forwarded-For is believed only from
// Config.Calls.TrustedProxies), its full method ("/pkg.Service/Method") the
// path and route, its method POST. Rule.Routes list full methods or whole
// services ("/pkg.Service/*"). A stream is decided once as it starts, and
// holds its concurrency slot until its handler returns; under Received and
// Sent, each message is decided too.
//
// A call allowed carries the RateLimit fields as header metadata. One
// refused fails with ResourceExhausted (a rate limit), Unavailable (shed,
// or the store down and failing closed) or Internal, with a
// google.rpc.RetryInfo detail of the Retry-After delay, and as trailer
// metadata (a trailers-only answer) the fields, retry-after and
// grpc-retry-pushback-ms, which grpc-go's own retry policy waits for.
//
// NewClient's interceptor is sluice's client for gRPC: it paces calls by
// the RateLimit metadata, fails them at once while the target's breaker is
// open, and retries the methods it is told are safe to retry under the
// server's delay, within a retry budget.
//
// The reference, with the mapping of codes and the measured overhead, is
// docs/grpc.md.
package sluicegrpc
