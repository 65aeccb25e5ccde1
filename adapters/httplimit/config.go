package httplimit

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// Config configures rate limits and a concurrency limit for an adapter's
// New: Limiter and Rules, Concurrency, or both.
type Config struct {
	// Limiter decides; its store, failure mode, fallback and observer apply.
	// Required with Rules.
	Limiter *core.Limiter
	// Rules are the limits, decided together for each request.
	Rules []Rule
	// Concurrency, if set, bounds the requests in flight (see the package
	// documentation, Backpressure): after the Rules allow a request, it
	// takes a slot of the limit, waiting in its queue if it has one, and
	// gives it back once the handler has returned, on every path; a
	// request the limit sheds is answered 503 with Retry-After. A request
	// the Rules deny never takes a slot.
	Concurrency *backpressure.Limiter
	// ConcurrencyKey finds the key of a Concurrency limit with a per-key
	// limit (backpressure.Config.PerKey); nil gives every request the key
	// "". A request it returns ErrNoKey for (an exempt client, with
	// ClientIP().Except) takes no slot; any other error fails the request
	// through OnError, as a *KeyError whose Policy is "(concurrency)".
	ConcurrencyKey Key
	// Class returns a request's class under Concurrency: which requests
	// are shed first (nil: every request is backpressure.Default).
	Class func(r *Request) core.Class
	// Headers selects the rate-limit header fields (ietfHeaders by default).
	Headers headerStyle
	// Shadow decides and sets header fields but never rejects a request,
	// nor holds it for a LeakyQueue policy's turn: a request the Rules deny,
	// or Concurrency sheds, proceeds, and the observers see the decision.
	Shadow bool
	// Skip, if set, exempts requests from the whole middleware: no decision,
	// no header fields, no slot.
	Skip func(r *Request) bool
	// Deny renders denials, and the requests Concurrency sheds (see
	// Denial.Shed); nil renders an RFC 9457 problem body.
	Deny func(r *Request, d *Denial) Response
	// OnError handles key-function and limiter errors; nil answers 500 with a
	// problem body that does not reveal the error. In shadow mode the request
	// proceeds whatever OnError returns.
	OnError func(r *Request, err error) *Response
	// TrustedProxies lists the proxies (CIDR prefixes or single addresses)
	// whose proxyHeader is believed. Empty: the peer is always the client.
	TrustedProxies []string
	// proxyHeader is the header trusted proxies set (xForwardedFor by default).
	proxyHeader proxyHeader
	// IPv6Prefix is the prefix length IPv6 clients are keyed by, 1 to 128
	// (default 64), for every rule of the Config. See the package
	// documentation for a coarser second limit per /48.
	IPv6Prefix int
	// Estimates treats costs as estimates: the units are reserved and the
	// *core.Reservation put in the request context (see ReservationFrom).
	Estimates bool
	// AdvertiseConcurrency publishes Concurrency's current limit in the
	// IETF fields, as a quota of concurrent requests named
	// ConcurrencyPolicy (qu="concurrent-requests"), on the responses of
	// the requests that take a slot: sluice's client caps its requests in
	// flight to the host at it. Needs Concurrency and ietfHeaders.
	AdvertiseConcurrency bool
	// Dependencies, if set, make the routes that call them admit what
	// those dependencies accept (see Dependency).
	Dependencies []Dependency
	// Clock dates legacyHeaders' X-RateLimit-Reset, and is the time
	// Dependencies are asked their capacity at (default core.SystemClock).
	Clock core.Clock
}

// New validates cfg and builds the Middleware it describes, which an
// adapter drives. Applications call their framework's adapter instead
// (sluicehttp.New and the others), which calls New; call it directly to
// check a Config, or to write an adapter (see "Writing an adapter" in the
// package doc).
func New(cfg Config) (*Middleware, error) {
	switch {
	case cfg.Limiter == nil && (len(cfg.Rules) > 0 || !cfg.admits()):
		return nil, errors.New("httplimit: Config.Limiter is nil")
	case len(cfg.Rules) == 0 && !cfg.admits():
		return nil, errors.New("httplimit: Config.Rules is empty, and there is no Concurrency limit")
	case cfg.Concurrency == nil && (cfg.ConcurrencyKey != nil || cfg.Class != nil):
		return nil, errors.New("httplimit: Config.ConcurrencyKey or Class is set without a Concurrency limit")
	case cfg.ConcurrencyKey != nil:
		if err := checkKey(cfg.ConcurrencyKey, "ConcurrencyKey"); err != nil {
			return nil, fmt.Errorf("httplimit: %w", err)
		}
	}
	if len(cfg.Rules) > maxRules {
		return nil, fmt.Errorf("httplimit: %d rules; at most %d", len(cfg.Rules), maxRules)
	}
	if cfg.Headers > noHeaders {
		return nil, fmt.Errorf("httplimit: unknown header style %d", cfg.Headers)
	}
	if cfg.ProxyHeader > xRealIP {
		return nil, fmt.Errorf("httplimit: unknown proxy header %d", cfg.ProxyHeader)
	}
	m := &Middleware{
		limiter:   cfg.Limiter,
		slots:     cfg.Concurrency,
		slotKey:   cfg.ConcurrencyKey,
		class:     cfg.Class,
		style:     cfg.Headers,
		shadow:    cfg.Shadow,
		skip:      cfg.Skip,
		deny:      cfg.Deny,
		onError:   cfg.OnError,
		proxy:     cfg.ProxyHeader,
		v6bits:    cfg.IPv6Prefix,
		reserve:   cfg.Estimates,
		clock:     cfg.Clock,
		advertise: cfg.AdvertiseConcurrency,
	}
	if m.v6bits == 0 {
		m.v6bits = 64
	}
	var err error
	if m.gates, err = newGates(&cfg); err != nil {
		return nil, err
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
		ru, err := newRule(r, cfg.Estimates)
		if err != nil {
			return nil, fmt.Errorf("httplimit: rule %d%s: %w", i, ru.label, err)
		}
		for _, p := range ru.policies {
			if j, dup := names[p.Name()]; dup {
				if j == i {
					return nil, fmt.Errorf("httplimit: rule %d%s lists policy name %q twice", i, ru.label, p.Name())
				}
				return nil, fmt.Errorf("httplimit: rules %d and %d both use policy name %q", j, i, p.Name())
			}
			names[p.Name()] = i
		}
		if r.Charge != nil {
			m.charged |= 1 << i
		}
		for _, p := range ru.policies {
			m.queues = m.queues || p.Algorithm() == core.LeakyQueue
		}
		m.rules = append(m.rules, ru)
	}
	m.buildPolicyTable()
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

// admits reports whether cfg limits admission beyond its rules: with a
// concurrency limit, or dependencies.
func (cfg *Config) admits() bool { return cfg.Concurrency != nil || len(cfg.Dependencies) > 0 }

// Middleware is a validated Config, ready to decide requests; New builds
// it. It is safe for concurrent use. An adapter drives it through Decide,
// or DecideHTTP and DecideHTTPUnrouted for frameworks built on net/http's
// types.
type Middleware struct {
	limiter *core.Limiter
	rules   []rule
	slots   *backpressure.Limiter // Config.Concurrency
	slotKey Key
	class   func(r *Request) core.Class
	style   headerStyle
	shadow  bool
	skip    func(r *Request) bool
	deny    func(r *Request, d *Denial) Response
	onError func(r *Request, err error) *Response
	trusted []netip.Prefix
	proxy   proxyHeader
	v6bits  int
	reserve bool
	charged uint64 // the rules with a Charge function
	queues  bool   // some rule's policy is a LeakyQueue: requests may wait their turn
	clock   core.Clock
	gates   []*gate // Config.Dependencies
	// advertise publishes the concurrency limit (Config.AdvertiseConcurrency),
	// in the IETF fields alone, which name their policies.
	advertise bool
	// policies holds the RateLimit-Policy value of every combination of
	// the rules' policies, when they are few (see buildPolicyTable).
	policies    []string
	pool        sync.Pool // *Request
	settlements sync.Pool // *Settlement
}

// rule is a validated Rule.
type rule struct {
	Rule
	policies []*core.Policy     // Policy alone, or Policies
	items    []string           // each policy's RateLimit-Policy list member
	label    string             // " (name)" or " (name|name)", for messages
	weight   int                // the rule's place value in a combination index
	routes   map[route]struct{} // Routes, parsed; nil if it is empty
}

// newRule validates r. Its label is set as soon as its policies are known.
func newRule(r Rule, reserve bool) (rule, error) {
	ru := rule{Rule: r}
	switch {
	case r.Select == nil && len(r.Policies) == 0:
		if r.Policy == nil {
			return ru, errors.New("Policy is nil")
		}
		ru.policies = []*core.Policy{r.Policy}
	case r.Policy != nil:
		return ru, errors.New("Policy is set as well as Policies or Select: a rule has one policy, or a set to select from")
	case r.Select == nil:
		return ru, errors.New("Policies without Select to choose among them")
	case len(r.Policies) == 0:
		return ru, errors.New("Select without Policies to choose from")
	default:
		for j, p := range r.Policies {
			if p == nil {
				return ru, fmt.Errorf("Policies[%d] is nil", j)
			}
		}
		ru.policies = slices.Clone(r.Policies)
	}
	names := make([]string, len(ru.policies))
	for j, p := range ru.policies {
		names[j] = p.Name()
		ru.items = append(ru.items, policyItem(p))
	}
	ru.label = " (" + strings.Join(names, "|") + ")"
	if err := checkKey(r.Key, "Key"); err != nil {
		return ru, err
	}
	if reserve {
		for _, p := range ru.policies {
			if p.Algorithm() == core.LeakyQueue {
				return ru, fmt.Errorf("%s is a LeakyQueue, whose requests wait for their turn, and Config.Estimates reserves without waiting: limit with it in a middleware of its own", p.Name())
			}
		}
	}
	if r.Charge != nil {
		if reserve {
			return ru, errors.New("Charge and Config.Estimates both settle the cost after the handler: limit with Charge in a middleware of its own")
		}
		for _, p := range ru.policies {
			switch p.Algorithm() {
			case core.TokenBucket, core.GCRA, core.LeakyBucket:
			default:
				return ru, fmt.Errorf("Charge needs a policy of the bucket family (TokenBucket, GCRA, LeakyBucket), whose refunds are exact; %s is a %s, "+
					"where a refund landing in a later window would give back a unit that window never took", p.Name(), p.Algorithm())
			}
		}
	}
	if len(r.Routes) > 0 {
		var err error
		if ru.routes, err = parseRoutes(r.Routes); err != nil {
			return ru, err
		}
	}
	return ru, nil
}

// policyTableSize is the most RateLimit-Policy values precomputed, one per
// combination of the rules' policies.
const policyTableSize = 256

// buildPolicyTable precomputes the RateLimit-Policy value of every
// combination of policies, when they are few: a request's combination is
// the index sum of each applied rule's weight times 1 + the index of its
// policy (a number whose digits, one per rule, say which of the rule's
// policies applied, or none).
func (m *Middleware) buildPolicyTable() {
	size := 1
	for i := range m.rules {
		m.rules[i].weight = size
		size *= len(m.rules[i].policies) + 1
		if size > policyTableSize {
			return
		}
	}
	m.policies = make([]string, size)
	var b []byte
	for combo := range m.policies {
		b = b[:0]
		for i := range m.rules {
			ru := &m.rules[i]
			if digit := combo / ru.weight % (len(ru.policies) + 1); digit > 0 {
				b = appendItem(b, ru.items[digit-1])
			}
		}
		m.policies[combo] = string(b)
	}
}

// maxRules bounds the rules of one Config: a request's rule set is a
// 64-bit mask.
const maxRules = 64

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
// Key returns under Policy, or under the policy Select chooses among
// Policies.
type Rule struct {
	// Policy is the limit. Policy names must be unique within a Config,
	// across every rule's policies: they identify the policy in header
	// fields and problem bodies.
	Policy *core.Policy
	// Policies and Select, in place of Policy, choose the limit per
	// request among a fixed set: a plan's, say (free, pro or internal, by
	// API key). New checks every policy in the set. Select must return one
	// of them: anything else, nil included, fails the request through
	// Config.OnError with a *KeyError wrapping ErrUnlistedPolicy, never
	// a silent default; an error of Select's own fails it too, except
	// ErrNoKey, which leaves the rule out. The header fields and problem
	// bodies name the chosen policy, and the store keeps a key's state per
	// policy: a key that moves to another policy starts afresh there.
	Policies []*core.Policy
	// Select chooses the request's policy among Policies (see Policies).
	Select func(r *Request) (*core.Policy, error)
	// Key finds the limited key. Required.
	Key Key
	// Cost returns the request's cost; nil means 1.
	Cost func(r *Request) int64
	// Charge, if set, charges only the requests whose response it selects
	// by status: failed logins, with Failures. The cost is taken before the
	// handler runs, together with the other rules' (a request that does
	// not fit is denied as any other); once the handler has answered, the
	// units are kept if Charge returns true for the status, and given
	// back otherwise. A handler that panics counts as answering 500.
	//
	// So at every moment, the units kept plus the units of requests still
	// running never exceed what the policy grants: the selected requests
	// never pass the limit, however many arrive at once, and a request's
	// units stay taken only if its response was selected. The price is
	// that a request still running holds its units even if it ends up
	// given them back: while many run at once, a request may be denied
	// that would fit once they have finished. The header fields report the
	// standing with the request's own units taken. Units whose give-back
	// fails (the store is down) stay taken; the limiter's observer sees
	// the failure.
	//
	// Charge needs a policy of the bucket family (TokenBucket, GCRA,
	// LeakyBucket), where units given back are as if never taken: New
	// refuses the window algorithms, whose give-back may land in a later
	// window than the units came from. It cannot be combined with
	// Config.Estimates.
	Charge func(status int) bool
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
	// Skip, if set, exempts the requests for which it returns true. To
	// exempt some clients or API keys, see ClientIPKey.Except and
	// KeyFunc.Except.
	Skip func(r *Request) bool
}

// ErrUnlistedPolicy is the error of a Select function that returned a
// policy not among its rule's Policies, or nil.
var ErrUnlistedPolicy = errors.New("httplimit: Select chose a policy not among the rule's Policies")

// KeyError reports a Select function's failure to Config.OnError: its
// own error, or ErrUnlistedPolicy.
type KeyError struct {
	Rule int   // the rule's index in Config.Rules
	Err  error // Select's error, or one wrapping ErrUnlistedPolicy

	label string // the rule's policy names
}

// Error names the rule and the failure.
func (e *KeyError) Error() string {
	return "httplimit: policy for rule " + strconv.Itoa(e.Rule) + e.label + ": " + e.Err.Error()
}

// Unwrap returns Select's error.
func (e *KeyError) Unwrap() error { return e.Err }

// headerStyle selects the rate-limit header fields the middleware sends.
type headerStyle uint8

// Header styles. See the package documentation for the exact fields.
const (
	// ietfHeaders sends RateLimit-Policy and RateLimit, the structured fields
	// of draft-ietf-httpapi-ratelimit-headers (-08 and later). The default.
	ietfHeaders headerStyle = iota
	// draftHeaders sends RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset (delta seconds), as the older drafts did.
	draftHeaders
	// legacyHeaders sends X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (Unix seconds).
	legacyHeaders
	// noHeaders sends no rate-limit fields (denials still carry Retry-After).
	noHeaders
)

// proxyHeader names the header that trusted proxies use to pass the client
// address on.
type proxyHeader uint8

// Proxy headers.
const (
	// xForwardedFor reads X-Forwarded-For, a list of addresses each proxy
	// appends to. The default.
	xForwardedFor proxyHeader = iota
	// Forwarded reads the RFC 7239 Forwarded field's for= parameters.
	Forwarded
	// xRealIP reads X-Real-IP, a single address set by the last proxy (the
	// last one in the field, after any the client sent).
	xRealIP
)

// Response is a complete answer written instead of calling the next handler.
type Response struct {
	Status      int    // the status code
	ContentType string // the Content-Type field, none if empty
	Body        []byte // the body
}
