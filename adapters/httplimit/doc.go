// Package httplimit is the HTTP layer over sluice's admission engine
// (package admit), for adapter authors: it answers what the engine decides
// in HTTP, with an RFC 9457 problem body by default, and drives the engine
// for frameworks built on net/http's types without allocating (DecideHTTP,
// StatusRecorder, SetFields). Applications use an adapter instead
// (sluicehttp, sluicegin, ...); package httplimittest is the behaviour table
// every HTTP adapter passes.
//
//	m, err := httplimit.New(cfg)
//	...
//	r, v := m.DecideHTTP(w, r, route, nil)
//	if v.Proceed {
//		next.ServeHTTP(w, r) // then v.Settlement.Settle(status), if any
//	}
package httplimit
