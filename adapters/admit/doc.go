// Package admit is sluice's admission engine, the same for every protocol:
// an application describes its limits in a Config, and an adapter (HTTP:
// sluicehttp, sluicechi, sluicegin, sluiceecho, sluiceechov5, sluicefiber,
// sluicefiberv3) turns it into its framework's middleware.
//
// A Config holds Rules, each a policy, a Key and the requests it applies
// to; the rules that apply to a request are decided as one, so that a
// request any rule denies takes nothing from the others. Beside the rules,
// Concurrency bounds the requests in flight and Dependencies admit what a
// dependency accepts:
//
//	cfg := admit.Config{
//		Limiter: limiter, // a core.Limiter over a store
//		Rules: []admit.Rule{
//			{Policy: perIP, Key: admit.ClientIP()},
//			{Policy: logins, Key: admit.ClientIP(), Routes: []string{"POST /login"},
//				Charge: func(status int) bool { return status >= 400 }},
//			{Policy: perUser, Key: admit.User(userFrom)},
//		},
//		TrustedProxies: []string{"10.0.0.0/8"},
//		Observer:       metrics.Observe,
//	}
//	mw, err := sluicehttp.New(cfg)
//
// PerClientIP is the Config of the adapters' one-line form, LimitByIP.
//
// The engine decides; a protocol layer answers. It reports every response's
// standing in the rate-limit fields, and a request that does not proceed
// with an HTTP-equivalent status (429 denied, 503 shed or failed closed)
// and Retry-After, through the adapter's View and Writer. An adapter
// author implements those two interfaces, calls Engine.Decide, runs the
// handler when the Verdict says so, and settles its Settlement with the
// response's status; package adapters/httplimit does this for frameworks
// built on net/http's types, and adapters/httplimit/httplimittest is the
// behaviour table every HTTP adapter passes.
//
// The reference, rule by rule and field by field, is docs/admit.md.
package admit
