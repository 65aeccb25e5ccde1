// Package httplimit is what an application configures to rate-limit HTTP
// requests, and to bound how many it serves at once, whatever its
// framework: a Config of Rules, each a policy, a Key and the requests it
// applies to, and a concurrency limit. The adapters (adapters/nethttp/sluicehttp,
// sluicegin, sluiceecho, sluiceechov5, sluicefiber, sluicefiberv3) take a
// Config and return their framework's middleware; PerClientIP is the Config
// of their one-line form, LimitByIP. All behaviour lives here, once: keys,
// one layered decision per request, a shaping queue's wait, rate-limit
// header fields on every response, a 429 (or 503) with Retry-After and an
// RFC 9457 problem body on a denial, a concurrency slot per request and a
// 503 with Retry-After when there is none. What an adapter author uses is
// in adapter.go and the section "Writing an adapter" below.
//
// # Rules and layers
//
// A Config holds Rules: a policy, a Key (usually a KeyFunc), and optionally
// a cost function, a list of routes and a skip function. The rules that
// apply to a request are decided as one (core.Limiter.TakeAll): a request
// denied by any of them takes nothing from the others. A typical set is a
// per-IP rule everywhere, a tighter rule restricted to Routes "/login", and
// a per-user rule whose key function returns ErrNoKey before
// authentication.
//
// # Policies chosen per request
//
// A rule may choose its policy per request, among a fixed set: per plan
// (free, pro, internal) by API key, say. Rule.Policies lists the set, which
// New checks like any policy, and Rule.Select picks one for each request. A
// policy outside the set, nil included, is an error handed to
// Config.OnError (a *KeyError saying the policy is not among the rule's), never a
// silent default. The header fields and problem bodies name the chosen
// policy, and the store keeps a key's state per policy.
//
// # Charging by status
//
// Rule.Charge counts only the requests whose response it selects by
// status: with func(status int) bool { return status >= 400 }, a limit on
// failed logins ignores the successful ones. The unit is reserved before the handler runs, so a request that
// does not fit is denied as any other, and given back after the handler if
// Charge declines the status; a handler that panics counts as a 500. At
// every moment, the units kept plus those of requests still running never
// exceed what the policy grants: the selected requests never pass the
// limit, however many arrive at once, and once every request has finished,
// exactly the selected ones are counted. A request still running holds its
// unit whatever it ends up answering, so while many run at once a request
// may be denied that would fit after they finish. Charge needs a policy of
// the bucket family, whose units given back are as if never taken.
//
// The header fields are set once the handler has answered, where the
// adapter can hold them until then (every adapter of sluice's can): a
// successful login under a Charge of status >= 400 reports login-failures
// as it stands with its unit given back, "login-failures";r=3;t=0 with
// none failed, not the r=2 of the unit it held while it ran. A response whose header leaves
// before the handler returns (a streamed body, a flush) is fields set for
// the status it was written with.
//
// # Routes
//
// Rule.Routes restricts a rule to some routes, written alike for every
// adapter: "POST /login" for the POST requests of the route /login, "/login"
// for all its requests; a HEAD request counts as a GET, which the GET
// handler serves. The template is the framework's own: "/items/:id" with
// Gin, Echo and Fiber, "/items/{id}" with net/http, whose ServeMux patterns
// may also hold a host, which entries leave out. New refuses an entry of any
// other form (a lower-case method, a stray space, a host, a query string or
// fragment, an entry listed twice), naming the rule and the entry. A '?' is
// accepted only where it marks a Fiber optional parameter ("/users/:id?").
//
// A "METHOD /template" entry limits the requests of exactly that method:
// methods are case-sensitive (RFC 9110) and matched as sent, so "post",
// "PUT" or "XPOST" are other methods. That is right for a route registered
// for one method, which answers the others 404 or 405 without running its
// handler. But a route that serves several methods (Echo's and Gin's Any,
// Fiber's All, a ServeMux pattern without a method such as "/login", which
// net/http runs for any token, "post" included) runs the same handler for
// each, and a handler that only decodes a body rarely looks at the method:
// limit such a route with a "/template" entry, which covers every method.
//
// The route is known only once the framework has routed the request. Where
// the middleware runs before that, or in front of a handler that may route
// the request further (Echo's Pre, Fiber's app.Use, net/http around another
// router or around the handler of a subtree pattern such as "/api/"), the
// route is unknown, and a request that a rule with Routes might apply to,
// or that a Route key asks about, fails with ErrRouteUnknown
// through Config.OnError (500 by default) rather than silently matching no
// route. A request the adapter knows matched no route (a 404) is no error:
// rules with Routes leave it alone. Each adapter's documentation says where
// to install the middleware.
//
// # Keys
//
// ClientIP keys by the client address: the direct peer, unless the peer is
// in Config.TrustedProxies, in which case the header named by
// Config.ProxyHeader (X-Forwarded-For by default, or RFC 7239 Forwarded, or
// X-Real-IP) is walked from the right, skipping trusted hops; the first
// untrusted hop is the client. Proxies append their elements to the client's
// own field line or add lines of their own, so each element is read from the
// bytes right of it alone: nothing a client writes before its proxies'
// elements changes how they are read. A malformed element (for Forwarded,
// any that the RFC 7239 grammar rejects, such as a quoted string that never
// closes) or an obfuscated hop ("unknown", "_hidden") stops the walk at the
// nearest hop the trusted ones vouch for (the peer, if the bad element is
// the one it wrote), so a bad header can neither fail the request nor
// choose its key. X-Real-IP holds one address: the last of its last line,
// since a proxy that adds its value rather than replacing the client's keeps
// the client's before it. Only one header is read, the one your proxies set:
// reading several would let a client forge the one the proxy does not
// overwrite. IPv4-mapped IPv6 addresses count as IPv4; IPv6 clients are
// keyed by their Config.IPv6Prefix (/64 by default), written as a prefix
// ("2001:db8:1:2::/64"). A peer that is not an IP address (a Unix socket) is
// keyed "unknown".
//
// A /64 is what one IPv6 subscriber usually gets, but many are given a /56
// or a /48, and a /48 holds 65,536 /64s: by itself, a per-/64 limit lets such
// a client multiply its quota that many times. For abuse limits (logins,
// sign-ups), add a coarser limit keyed per /48. Config.IPv6Prefix applies to
// every rule of a Config, so give that limit a second middleware, with
// IPv6Prefix: 48 and a policy of its own.
//
// Header, User, Route, Const and Func key by a request header, a user found
// in the request context, the route template, a constant and any function;
// Join composes keys with a length prefix on every part, so no combination of
// parts can forge another; New refuses a Join of no keys or of a nil one. A
// key that returns ErrNoKey (a missing header, no user, no route) leaves its
// rule out of the decision; any other error is a *KeyError handed to
// Config.OnError, which by default answers 500 with a problem body that does
// not reveal the error.
//
// Keys exempt some requests from their rule, which then leaves them out
// without a store round trip: ClientIP().Except("10.0.0.0/8", "192.0.2.7")
// exempts clients by address or prefix, matching the address ClientIP
// resolves (so only through trusted proxies), and a KeyFunc's Except
// exempts exact keys, such as an internal service's API key:
// Header("X-API-Key").Except(internalKey).
//
// Authentication middleware usually keeps the user in the framework's own
// per-request values rather than in the request context. Key, cost and skip
// functions find both through Request.Context: its Value looks a string key
// up in the framework's values first (Gin's and Echo's c.Set, Fiber's
// c.Locals; an adapter hands them over), then in the request context. That
// context lives in the pooled Request, so it costs no allocation, and like
// the Request it is valid only during the call. The limiter, its store and
// its observer get the request context itself.
//
// # Header fields
//
// Config.Headers selects the style; the figures are those of the decision
// closest to exhaustion (storekit.MostRestrictive), and every figure is a whole
// number of seconds rounded up.
//
// Headers "ietf" (the default), draft-ietf-httpapi-ratelimit-headers -08 and later:
//
//	RateLimit-Policy: "per-ip";q=10;w=5, "login";q=3;w=60
//	RateLimit: "per-ip";r=7;t=2
//
// RateLimit-Policy lists every policy that applied to the request, in rule
// order; its values are precomputed per combination of rules (up to eight
// rules). On net/http responses every field set has a value slice of its
// own, so a handler may change the slice it finds in the header freely.
// For each policy q is Policy.Burst() and w is Policy.Window(): for the
// bucket family (token bucket, GCRA, leaky bucket) q is the capacity and w
// the time an empty bucket takes to refill; for the window family (fixed
// window, sliding log, sliding counter) q is the quota and w the period.
// RateLimit reports r, the units remaining, and t: when the request is
// allowed, the time until the key is back to its full q
// (Decision.ResetAfter), so 0 <= t <= w and a client spreading r units over
// t seconds never runs dry; when it is denied, t is the Retry-After value,
// as the draft requires.
//
// "draft": RateLimit-Limit (q), RateLimit-Remaining (r), RateLimit-Reset
// (t, in delta seconds). "legacy": X-RateLimit-Limit,
// X-RateLimit-Remaining, X-RateLimit-Reset (now + t, in Unix seconds, read
// from Config.Clock). "none" sends none of these; denials still carry
// Retry-After.
//
// A decision made without figures (the store failed and the limiter fails
// open or closed, Decision.Limit == 0) sends no rate-limit fields.
//
// Middlewares stack: a per-IP limit before authentication and a per-user
// or per-plan one after it are two middlewares, and the fields of both
// reach the client. Each adds its items to the IETF lists set before it,
// so a request both allowed reads
//
//	RateLimit-Policy: "per-ip";q=10;w=5, "free";q=2;w=60
//	RateLimit: "per-ip";r=9;t=1, "free";r=1;t=30
//
// and a denial by the later one keeps the earlier one's items, its
// Retry-After the longest of any set on the way. "draft" and "legacy",
// one figure each, keep the standing with the fewest units
// remaining. A middleware whose rules did not apply to the request adds
// nothing.
//
// # Denials
//
// A denied request is answered 429 Too Many Requests with Retry-After (whole
// seconds, rounded up, at least 1), Cache-Control: no-store, the rate-limit
// fields and, unless Config.Deny replaces it, a problem body:
//
//	{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",
//	 "title":"Too Many Requests","status":429,
//	 "detail":"Rate limit exceeded; retry after 1 second.",
//	 "violated-policies":["per-ip"]}
//
// A request whose cost exceeds a policy's Burst (core.Decision.Impossible) can
// never pass: it is answered 429 without Retry-After (there is no time after
// which retrying helps), with t reporting the time until the key is full and a
// detail saying the request is too large. When the store fails and the limiter
// fails closed, the answer is 503 Service Unavailable with Retry-After and an
// about:blank problem body: the client did nothing wrong. A denial decided by
// a fallback store has real figures and is answered 429 like any other.
//
// # Shaping queues
//
// A rule whose policy is a core.LeakyQueue spreads a burst out instead of
// refusing it: the decision grants the request a turn (core.Decision.Delay),
// and the middleware holds the request until then (core.Limiter.TakeTurn, on the
// limiter's clock), before the handler runs. The wait honours the request's
// context. A request whose deadline falls before its turn is denied at
// once, 429 with the turn as Retry-After, and gives the turn back; so is
// one whose deadline passes while it waits (a context that did not tell
// its deadline up front). A request whose context is canceled while it
// waits (its client went away) gives its turn back too, so that the next
// request gets it; nothing was served, and it is answered a bare 503,
// which its client, gone, most likely never reads: the only answer without
// a Retry-After. The limiter's observer sees the wait: queued, then waited
// or shed.
// Config.Estimates and Rule.Charge refuse a LeakyQueue.
//
// # Backpressure
//
// Config.Concurrency bounds the requests in flight with a
// backpressure.Limiter (a fixed limit, or one that follows the service's
// latency, AIMD or Gradient; a bounded queue; classes of requests shed in
// order). It is configured beside the rules, and every adapter applies it
// the same way:
//
//	slots, err := backpressure.New(backpressure.Config{
//		Controller: gradient, Queue: 100, MaxWait: 50 * time.Millisecond,
//		Headroom:   backpressure.Headroom{Critical: 0.1},
//		Name: "api", Observer:  observe, // the limiter's observer
//	})
//	...
//	cfg := httplimit.Config{Limiter: limiter, Rules: rules,
//		Concurrency: slots, Class: classOf, ConcurrencyKey: httplimit.ClientIP()}
//
// The rules decide first, so that an abusive client is refused by its rate
// limit without taking a slot; a request they allow then takes a slot,
// under the key ConcurrencyKey finds (for a per-key limit) and the class
// Class gives, waiting in the limit's queue if it has one. The handler runs
// holding the slot, which is given back once it returns, on every path:
// its status tells the limit's algorithm how the request went. A 503 or
// 504, or a request context whose deadline passed, says the service is
// overloaded (core.Failed); a panic or a client gone says nothing
// about load (Ignored); anything else is a success whose latency counts.
//
// A request the limit sheds is answered 503 Service Unavailable with
// Retry-After (the limit's estimate of when the work in flight will have
// drained, in whole seconds rounded up, at least 1), Cache-Control:
// no-store, the rules' rate-limit fields, and, unless Config.Deny renders
// it (Denial.Shed says why), an about:blank problem body:
//
//	{"type":"about:blank","title":"Service Unavailable","status":503,
//	 "detail":"The service is overloaded; retry after 1 second."}
//
// The units its rules took stay taken, as for any request the client sent,
// except under a Rule.Charge, which never saw a status: they go back. A
// request whose deadline passes while it waits for a slot (a server's
// timeout) is shed the same way (Denial.Shed.Reason is
// backpressure.WaitTimeout); one whose context is canceled (its client
// gone) is answered a bare 503, as one gone while waiting for its turn. A
// ConcurrencyKey that
// returns ErrNoKey exempts the request from the limit.
//
// With Config.AdvertiseConcurrency the limit's current value is published
// in the IETF fields as a quota of concurrent requests,
// "concurrency";q=64;qu="concurrent-requests" in RateLimit-Policy and
// "concurrency";r=63;t=0 in RateLimit, which sluice's client obeys.
//
// # Backpressure that travels
//
// Config.Dependencies links the routes that call a dependency to what a
// client of it knows of its capacity (Dependency.Capacity, such as
// sluice's client.Transport.HostCapacity(host)): they admit about what the
// dependency accepts, following its rate-limit fields, Retry-After, learned
// rate or open breaker as they change, and answer the excess at once with
// 503, a Retry-After derived from the dependency's own advice and a
// problem of the RateLimit draft's temporary-reduced-capacity type. A
// request the rules allowed passes its dependencies before it takes a
// slot. Measured in a chain over loopback (benchmarks/chain), such a
// service serves its dependency's whole capacity and answers the rest in
// microseconds, where without the link its requests pile up in its client.
//
// # Shadow mode, observation, reservations
//
// With Config.Shadow the middleware decides, sets the header fields and lets
// the limiter's observer (core.WithObserver) see every outcome, but never
// rejects a request, nor holds one for its turn: the way to roll a new limit
// out safely. A request Config.Concurrency sheds proceeds without a slot.
// The observer is the limiter's: it sees every decision with its key,
// policy, outcome (allowed, near the limit, denied, store failed) and
// latency, and each wait for a turn. Give the concurrency limit the same
// observer through backpressure.Config.Observer, and it sees the limit's waits,
// sheds and limit changes too.
//
// With Config.Estimates each rule's cost is an estimate: the units are reserved
// (core.Limiter.Reserve) and the *core.Reservation is put in the request
// context, where the handler finds it with ReservationFrom and settles the
// actual cost with Reconcile. A reservation the handler never reconciles keeps
// the estimate.
//
// # Writing an adapter
//
// Applications never touch this part. An adapter builds a *Middleware from
// the user's Config with New and, for each request, translates its
// framework's request and response into a View and a Writer, calls Decide,
// runs the next handler if the Verdict says so, and settles the Verdict's
// Settlement with the response's status. Everything else (keys, rules,
// header fields, deny responses, slots) is this package's, the same for
// every adapter. A sketch, for a framework with a context c:
//
//	m, err := httplimit.New(cfg)
//	...
//	return func(c *Ctx) error {
//		v := m.Decide((*view)(c), (*view)(c)) // view: c seen as View and Writer
//		if !v.Proceed {
//			return nil // the response is written
//		}
//		if v.Reservation != nil {
//			c.SetContext(v.Context(c.Context()))
//		}
//		if v.Settlement == nil {
//			return c.Next()
//		}
//		status := 0 // stays 0 if the handler panics
//		defer func() { v.Settlement.Settle(status) }()
//		err := c.Next()
//		status = statusOf(c, err) // what the client is answered
//		v.Settlement.SetFields(status, (*view)(c)) // before the header is sent
//		return err
//	}
//
// Settlement.SetFields (SetHTTPFields, on net/http's types) sets the
// rate-limit fields again for the status, as they stand once a rule with
// Charge has kept or given back its units: an adapter calls it after the
// handler has chosen the status and before the header is sent, where its
// framework lets it (a buffered response, as fasthttp's; a hook before the
// header is written, as Echo's Response.Before; a wrapped writer, as
// StatusRecorder with its Settlement set, and Gin's in sluicegin). All six
// adapters do; one that cannot leaves the fields with the request's units
// reserved, and says so.
//
// Frameworks built on net/http's types call DecideHTTP (or
// DecideHTTPUnrouted, in front of a router) instead, which is View, Writer
// and Decide in one, without an allocation; StatusRecorder records the
// status where the framework does not. A Writer that copies header values
// into buffers of its own (fasthttp) has a method SetHeaderBytes(key
// string, value []byte), and a View whose framework keeps no []string of a
// header's values a method AppendHeaderValues(dst []string, name string)
// []string: Decide uses them when they are there. A View with a method
// Get(key string) any shows key functions the framework's per-request
// values. The behaviour table in httplimittest runs against an
// adapter and checks all of it.
//
// # The adapters
//
// Each adapter's New takes a Config (LimitByIP takes a policy and builds
// PerClientIP's), and returns its framework's middleware, to install where
// the route is known for Routes to work:
//
//	framework  constructor                                  returns                          install it
//	net/http   sluicehttp.New(cfg)                          func(http.Handler) http.Handler  around the *http.ServeMux (inside http.StripPrefix,
//	                                                                                         not outside), or around a one-path pattern's handler
//	chi        sluicehttp.New(cfg, sluicehttp.Chi(r))       func(http.Handler) http.Handler  r.Use, with Chi asking chi's router for the route,
//	                                                                                         or per route with r.With(mw)
//	Gin        sluicegin.New(cfg)                           gin.HandlerFunc                  anywhere (Use, group, route)
//	Echo v4    sluiceecho.New(cfg)                          echo.MiddlewareFunc              Use, group or route; under e.Pre only with
//	                                                                                         sluiceecho.BeforeRouting(), which refuses Routes
//	Echo v5    sluiceechov5.New(cfg)                        echo.MiddlewareFunc              Use, group or route; under e.Pre every route is unknown
//	Fiber v2   sluicefiber.New(cfg)                         fiber.Handler                    on the routes (app.Get(path, mw, h)), not app.Use
//	Fiber v3   sluicefiberv3.New(cfg)                       fiber.Handler                    on the routes (app.Get(path, mw, h)), not app.Use
//
// Each LimitByIP call has its own memory store: two routes given two
// LimitByIP calls count apart; to share one allowance, install one
// middleware where the routes meet (a group, Use). Behind a proxy, start
// from the same Config and say which proxies to believe:
//
//	cfg := httplimit.PerClientIP(core.PerMinute(60))
//	cfg.TrustedProxies = []string{"10.0.0.0/8"}
//	mw, err := sluicegin.New(cfg)
//
// # One behaviour table
//
// One table of behaviours (package httplimittest) runs against every
// adapter, and chi: statuses, exact header values, bodies, skips, key
// isolation, costs, layered limits, routes (including the placements that
// cannot see them), failure modes, spoofed and trusted X-Forwarded-For,
// Forwarded and X-Real-IP, IPv6 prefixes, user keys, policies per request,
// exempt keys (on a store that fails every call), charging by status, the
// concurrency limit (503s, classes, per-key slots, exemptions, Deny
// rendering sheds, shadow mode, a charge given back to a shed request) and
// the shaping queue (a turn given back goes to the next request, on a
// manual clock). Two of its checks send 200 logins at once, half failing,
// against a limit of 10 failures: with every refund held back until all
// 200 are decided, exactly 10 pass; with nothing held back, at most 10
// failures pass, and exactly those stay counted. Another holds every
// adapter to the slot bar: handlers that panic, that work until their
// deadline passes or their client goes, clients that go while waiting for
// a slot, then 200 such requests at once, end with 0 in flight, 0 waiting
// and no goroutine left (goleak).
//
// # Overhead
//
// An allowed request allocates nothing of its own but a share of two slabs:
// its header values come from a slab of 8 (64 bytes a response), and a key
// that is not the peer's own text is carved from a slab of 256 bytes
// (Fiber's adapters: the peer's address is not text there). A denial takes
// one allocation for its field values, none on Fiber. Taking and giving
// back a concurrency slot allocates nothing (TestSlotAllocatesNothing).
//
// What each adapter adds to a request over the framework's bare handler,
// one client on the memory store, in adapters/internal/bench: five
// interleaved rounds of this code against d4a2d96, before the HTTP path's
// last work, medians, load 1.3:
//
//	go test ./adapters/internal/bench -run '^$' -bench '^BenchmarkOverhead$' -benchmem -benchtime 1000000x -count 5
//
//	adapter   bare     allowed: overhead (before)   denied: overhead (before)   allocs allowed / denied (before)
//	net/http  51.5 ns  444.1 ns: +393 (+454)         689.6 ns: +638 (+736)       0 / 1 (0 / 3)
//	Gin       40.6 ns  398.2 ns: +358 (+467)         623.8 ns: +583 (+715)       0 / 1 (0 / 3)
//	Echo      50.0 ns  436.0 ns: +386 (+511)         651.2 ns: +601 (+794)       1 / 2 (1 / 4)
//	Echo v5   44.6 ns  415.6 ns: +371 (+455)         677.3 ns: +633 (+765)       0 / 1 (0 / 3)
//	Fiber     55.6 ns  396.0 ns: +340 (+440)         595.9 ns: +540 (+806)       0 / 0 (1 / 2)
//	Fiber v3  82.9 ns  409.4 ns: +327 (+562)         589.8 ns: +507 (+823)       0 / 0 (1 / 2)
//
// Echo allocates once per middleware of its own (its "noop" case, a
// pass-through middleware, does too). On the same machine half an hour before,
// at the same load, the same binaries measured 21–25% less (net/http +294,
// Gin +282, Fiber +265): compare the columns of one run, not runs. What is
// left is the store's decision (a third of it a read of the clock), the
// two header fields (two map assignments on net/http, two copies into
// fasthttp's header on Fiber) and, since the bare handler allocates
// nothing, the garbage collections the slab of header values brings about.
// The benchmarks module (benchmarks/) times the adapters against other
// libraries' middleware, over 100k clients and with a fresh
// httptest.ResponseRecorder per request too.
package admit
