package httplimit

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/sluice-go/sluice/adapters/adapterkit"
	"github.com/sluice-go/sluice/core"
)

// Config configures rate limits for an adapter's New. Only Limiter and
// Rules are required.
type Config struct {
	// Limiter decides; its store, failure mode, fallback and observer apply.
	Limiter *core.Limiter
	// Rules are the limits, decided together for each request.
	Rules []Rule
	// Headers selects the rate-limit header fields (IETFHeaders by default).
	Headers HeaderStyle
	// Shadow decides and sets header fields but never rejects a request.
	Shadow bool
	// Skip, if set, exempts requests from the whole middleware: no decision,
	// no header fields.
	Skip SkipFunc
	// Deny renders denials; nil renders an RFC 9457 problem body.
	Deny DenyFunc
	// OnError handles key-function and limiter errors; nil answers 500 with a
	// problem body that does not reveal the error. In shadow mode the request
	// proceeds whatever OnError returns.
	OnError ErrorFunc
	// TrustedProxies lists the proxies (CIDR prefixes or single addresses)
	// whose ProxyHeader is believed. Empty: the peer is always the client.
	TrustedProxies []string
	// ProxyHeader is the header trusted proxies set (XForwardedFor by default).
	ProxyHeader ProxyHeader
	// IPv6Prefix is the prefix length IPv6 clients are keyed by, 1 to 128
	// (default 64), for every rule of the Config. See the package
	// documentation for a coarser second limit per /48.
	IPv6Prefix int
	// Reserve treats costs as estimates: the units are reserved and the
	// *core.Reservation put in the request context (see ReservationFrom).
	Reserve bool
	// Clock dates LegacyHeaders' X-RateLimit-Reset (default core.SystemClock).
	Clock core.Clock
}

// New validates cfg and builds the middleware it describes, which an
// adapter drives. Applications call their framework's adapter instead
// (sluicehttp.New and the others), which calls New; call it directly to
// check a Config, or to write an adapter (see package adapterkit).
func New(cfg Config) (adapterkit.Middleware, error) {
	m, err := newMiddleware(cfg)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func newMiddleware(cfg Config) (*middleware, error) {
	if cfg.Limiter == nil {
		return nil, errors.New("httplimit: Config.Limiter is nil")
	}
	if len(cfg.Rules) == 0 {
		return nil, errors.New("httplimit: Config.Rules is empty")
	}
	if len(cfg.Rules) > maxRules {
		return nil, fmt.Errorf("httplimit: %d rules; at most %d", len(cfg.Rules), maxRules)
	}
	if cfg.Headers > NoHeaders {
		return nil, fmt.Errorf("httplimit: unknown header style %d", cfg.Headers)
	}
	if cfg.ProxyHeader > XRealIP {
		return nil, fmt.Errorf("httplimit: unknown proxy header %d", cfg.ProxyHeader)
	}
	m := &middleware{
		limiter: cfg.Limiter,
		style:   cfg.Headers,
		shadow:  cfg.Shadow,
		skip:    cfg.Skip,
		deny:    cfg.Deny,
		onError: cfg.OnError,
		proxy:   cfg.ProxyHeader,
		v6bits:  cfg.IPv6Prefix,
		reserve: cfg.Reserve,
		clock:   cfg.Clock,
	}
	if m.v6bits == 0 {
		m.v6bits = 64
	}
	if m.v6bits < 1 || m.v6bits > 128 {
		return nil, fmt.Errorf("httplimit: IPv6Prefix must be 1 to 128, got %d", cfg.IPv6Prefix)
	}
	if m.clock == nil {
		m.clock = core.SystemClock{}
	}
	if m.deny == nil {
		m.deny = problemDeny
	}
	if m.onError == nil {
		m.onError = internalError
	}
	for _, s := range cfg.TrustedProxies {
		p, err := parseTrusted(s)
		if err != nil {
			return nil, fmt.Errorf("httplimit: trusted proxy %q: %w", s, err)
		}
		m.trusted = append(m.trusted, p)
	}
	names := make(map[string]int, len(cfg.Rules))
	for i, r := range cfg.Rules {
		if r.Policy == nil {
			return nil, fmt.Errorf("httplimit: rule %d: Policy is nil", i)
		}
		if err := checkKey(r.Key, "Key"); err != nil {
			return nil, fmt.Errorf("httplimit: rule %d (%s): %w", i, r.Policy.Name(), err)
		}
		if j, dup := names[r.Policy.Name()]; dup {
			return nil, fmt.Errorf("httplimit: rules %d and %d both use policy name %q", j, i, r.Policy.Name())
		}
		names[r.Policy.Name()] = i
		ru := rule{Rule: r, item: policyItem(r.Policy)}
		if len(r.Routes) > 0 {
			var err error
			if ru.routes, err = parseRoutes(r.Routes); err != nil {
				return nil, fmt.Errorf("httplimit: rule %d (%s): %w", i, r.Policy.Name(), err)
			}
		}
		m.rules = append(m.rules, ru)
	}
	if len(m.rules) <= policyTableRules {
		m.policies = make([]string, 1<<len(m.rules))
		for mask := range m.policies {
			m.policies[mask] = m.policyList(uint64(mask))
		}
	}
	n := len(m.rules)
	m.pool.New = func() any {
		return &Request{
			m:    m,
			key:  make([]byte, 0, 64),
			buf:  make([]byte, 0, 256),
			reqs: make([]core.Request, 0, n),
			ds:   make([]core.Decision, n),
		}
	}
	return m, nil
}

// middleware is a validated Config, ready to decide requests: the
// adapterkit.Middleware New returns. It is safe for concurrent use.
type middleware struct {
	limiter *core.Limiter
	rules   []rule
	style   HeaderStyle
	shadow  bool
	skip    SkipFunc
	deny    DenyFunc
	onError ErrorFunc
	trusted []netip.Prefix
	proxy   ProxyHeader
	v6bits  int
	reserve bool
	clock   core.Clock
	// policies holds the RateLimit-Policy value of every combination of
	// rules (indexed by rule mask) when there are few rules.
	policies []string
	pool     sync.Pool
}

type rule struct {
	Rule
	routes map[route]struct{} // Routes, parsed; nil if it is empty
	item   string             // this policy's RateLimit-Policy list member
}

// maxRules bounds the rules of one Config (a request's rule set is a
// 64-bit mask); policyTableRules is the most rules whose RateLimit-Policy
// values are all precomputed (2^n strings).
const (
	maxRules         = 64
	policyTableRules = 8
)

// parseTrusted reads a CIDR prefix or a single address. IPv4-mapped IPv6
// prefixes are turned into IPv4 ones, since peers are compared unmapped.
func parseTrusted(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return netip.Prefix{}, err
		}
		if a.Zone() != "" {
			return netip.Prefix{}, errors.New("zones are not supported")
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// Rule is one limit: requests it applies to take Cost units from the key
// Key returns under Policy.
type Rule struct {
	// Policy is the limit. Required. Policy names must be unique within a
	// Config: they identify the policy in header fields and problem bodies.
	Policy *core.Policy
	// Key finds the limited key. Required.
	Key Key
	// Cost returns the request's cost; nil means 1.
	Cost CostFunc
	// Routes, if not empty, restricts the rule to requests whose route is
	// one of these: "METHOD /template" for the requests of exactly that
	// method (HEAD counting as GET), "/template" for any method. Use
	// "/template" for a route that serves several methods (a ServeMux
	// pattern without a method, Echo's or Gin's Any, Fiber's All): its
	// handler also runs for "PUT", "post" or "XPOST", which a "POST
	// /template" entry does not cover. A template is written as the
	// adapter's framework writes it ("/items/:id", net/http's
	// "/items/{id}"), without the host a ServeMux pattern may have. New
	// refuses an entry of any other form. Where the middleware cannot know
	// the route, a rule with Routes fails the request with ErrRouteUnknown:
	// see the adapter's documentation.
	Routes []string
	// Skip, if set, exempts the requests for which it returns true.
	Skip SkipFunc
}

// CostFunc returns the number of units a request costs under a rule. A
// result of zero or less leaves the rule out for that request.
type CostFunc func(r *Request) int64

// SkipFunc reports whether a request is exempt (from a rule, or from the
// whole middleware).
type SkipFunc func(r *Request) bool

// HeaderStyle selects the rate-limit header fields the middleware sends.
type HeaderStyle uint8

// Header styles. See the package documentation for the exact fields.
const (
	// IETFHeaders sends RateLimit-Policy and RateLimit, the structured fields
	// of draft-ietf-httpapi-ratelimit-headers (-08 and later). The default.
	IETFHeaders HeaderStyle = iota
	// DraftHeaders sends RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset (delta seconds), as the older drafts did.
	DraftHeaders
	// LegacyHeaders sends X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (Unix seconds).
	LegacyHeaders
	// NoHeaders sends no rate-limit fields (denials still carry Retry-After).
	NoHeaders
)

// ProxyHeader names the header that trusted proxies use to pass the client
// address on.
type ProxyHeader uint8

// Proxy headers.
const (
	// XForwardedFor reads X-Forwarded-For, a list of addresses each proxy
	// appends to. The default.
	XForwardedFor ProxyHeader = iota
	// Forwarded reads the RFC 7239 Forwarded field's for= parameters.
	Forwarded
	// XRealIP reads X-Real-IP, a single address set by the last proxy (the
	// last one in the field, after any the client sent).
	XRealIP
)

// Response is a complete answer written instead of calling the next handler.
type Response struct {
	Status      int    // the status code
	ContentType string // the Content-Type field, none if empty
	Body        []byte // the body
}

// DenyFunc renders the response to a denied request. The rate-limit fields,
// Retry-After and Cache-Control are already set when it runs. A Response
// whose Status is not a valid status code is sent with the Denial's.
type DenyFunc func(r *Request, d *Denial) Response

// ErrorFunc handles an error that prevented a decision: a *KeyError from a key
// function, or an error from the limiter. It returns the response to send (a
// Status that is not a valid status code is sent as 500), or nil to let the
// request through undecided.
type ErrorFunc func(r *Request, err error) *Response
