package admit

import (
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// PerClientIP returns the Config of the common case, which every adapter's
// LimitByIP builds its middleware from: each client IP address limited by p,
// in a memory store of its own, with the default header fields and denial
// bodies. The store needs no Close: its background sweep ends once the
// middleware is unreachable.
//
// Start from it to change what the one-line form fixes, such as the proxies
// whose X-Forwarded-For is believed (behind a load balancer, every request
// otherwise comes from the balancer's address):
//
//	cfg := httplimit.PerClientIP(core.PerMinute(60))
//	cfg.TrustedProxies = []string{"10.0.0.0/8"}
//
// Each call has a store of its own, so two middlewares built from two calls
// count apart, even with the same policy: to have several routes share one
// allowance, install one middleware where they all pass (a group), or share
// a Limiter in a Config of your own. A nil p gives a Config that New refuses.
func PerClientIP(p *core.Policy) Config {
	// Without options neither constructor can fail: a failure would be a
	// bug in sluice, not something a caller could act on.
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	limiter, err := core.NewLimiter(store)
	if err != nil {
		panic(err)
	}
	return Config{Limiter: limiter, Rules: []Rule{{Policy: p, Key: ClientIP()}}}
}
