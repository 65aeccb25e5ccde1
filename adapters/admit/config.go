//lint:file-ignore ST1005 a rule's errors begin with the name of the Rule field at fault, which New prefixes with the rule ("rule 0 (per-ip): Policy is nil")

package admit

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/sluice-go/sluice/core"
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
	// the Rules deny never takes a slot. A backpressure.Limiter bounds the
	// requests in this process, redisslots.Slots those of a fleet.
	Concurrency Slots
	// ConcurrencyKey finds the key of a Concurrency limit with a per-key
	// limit (backpressure.Config.PerKey); nil gives every request the key
	// "". A request it returns ErrNoKey for (an exempt client, with
	// ClientIP().Except) takes no slot; any other error fails the request
	// through OnError, as a *KeyError whose Policy is "(concurrency)".
	ConcurrencyKey Key
	// Class returns a request's class under Concurrency: Critical for the
	// requests to keep serving when the service is saturated (health
	// checks, payments), Sheddable for those to shed first (prefetches,
	// batch jobs); nil makes every request core.Default. A value
	// package backpressure does not know fails the request through
	// OnError.
	Class func(r *Request) core.Class
	// Headers selects the rate-limit header fields the middleware sends
	// (see the package documentation for the exact fields):
	//
	//   - "ietf" (or ""): RateLimit-Policy and RateLimit, the structured
	//     fields of draft-ietf-httpapi-ratelimit-headers (-08 and later).
	//   - "draft": RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset
	//     (delta seconds), as the older drafts did.
	//   - "legacy": X-RateLimit-Limit, X-RateLimit-Remaining and
	//     X-RateLimit-Reset (Unix seconds).
	//   - "none": no rate-limit fields (denials still carry Retry-After).
	Headers string
	// Shadow decides and sets header fields but never rejects a request,
	// nor holds it for a LeakyQueue policy's turn: a request the Rules deny,
	// or Concurrency sheds, proceeds, and the observers see the decision.
	Shadow bool
	// Skip, if set, exempts requests from the whole middleware: no decision,
	// no header fields, no slot.
	Skip func(r *Request) bool
	// Deny renders denials, and the requests Concurrency sheds (see
	// Denial.Shed); nil renders an RFC 9457 problem body. The rate-limit
	// fields, Retry-After and Cache-Control are already set when it runs.
	// A Response whose Status is not a valid status code is sent with the
	// Denial's.
	Deny func(r *Request, d *Denial) Response
	// OnError handles an error that prevented a decision: a *KeyError from
	// a key or Select function, or an error from the limiter. It returns
	// the response to send (a Status that is not a valid status code is
	// sent as 500), or nil to let the request through undecided; nil
	// answers 500 with a problem body that does not reveal the error. In
	// shadow mode the request proceeds whatever OnError returns.
	OnError func(r *Request, err error) *Response
	// TrustedProxies lists the proxies (CIDR prefixes or single addresses)
	// whose ProxyHeader is believed. Empty: the peer is always the client.
	TrustedProxies []string
	// ProxyHeader is the header trusted proxies set: "X-Forwarded-For" (the
	// default), a list of addresses each proxy appends to; "Forwarded", RFC
	// 7239's, whose for= parameters are read; or "X-Real-IP", a single
	// address set by the last proxy (the last one in the field, after any
	// the client sent).
	ProxyHeader string
	// IPv6Prefix is the prefix length IPv6 clients are keyed by, 1 to 128
	// (default 64), for every rule of the Config. See the package
	// documentation for a coarser second limit per /48.
	IPv6Prefix int
	// Estimates treats costs as estimates: the units are reserved and the
	// *core.Reservation put in the request context (see ReservationFrom).
	Estimates bool
	// AdvertiseConcurrency publishes Concurrency's current limit in the
	// IETF fields, as a quota of concurrent requests named "concurrency"
	// (qu="concurrent-requests"), on the responses of the requests that
	// take a slot, after the items of the rules and of any sluice
	// middleware earlier on the path: sluice's client caps its requests
	// in flight to the host at it. Needs Concurrency and the "ietf"
	// Headers.
	AdvertiseConcurrency bool
	// Dependencies, if set, make the routes that call them admit what
	// those dependencies accept (see Dependency).
	Dependencies []Dependency
	// Observer sees everything the engine drives: the Limiter's decisions,
	// the Concurrency slots' waits and sheds, the Dependencies' limits and
	// sheds. It is handed to each of them that has no observer of its own
	// (core.Observable); nil takes the Limiter's, if it has one.
	Observer core.Observer
	// Clock dates the "legacy" X-RateLimit-Reset, and is the time
	// Dependencies are asked their capacity at (default core.SystemClock).
	Clock core.Clock
	// Logger receives what an operator must fix, once per middleware: a
	// rule with Routes, or a Route key, installed where the route is not
	// known (see ErrRouteUnknown), with where to install it instead.
	// Default slog.Default().
	Logger *slog.Logger
}

// New validates cfg and builds the Middleware it describes, which an
// adapter drives. Applications call their framework's adapter instead
// (sluicehttp.New and the others), which calls New; call it directly to
// check a Config, or to write an adapter (see "Writing an adapter" in the
// package doc).
func New(cfg Config) (*Engine, error) {
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	observeOnce(&cfg)
	style, proxy, err := parseEnums(&cfg)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		limiter:   cfg.Limiter,
		slots:     cfg.Concurrency,
		slotKey:   cfg.ConcurrencyKey,
		class:     cfg.Class,
		style:     style,
		shadow:    cfg.Shadow,
		skip:      cfg.Skip,
		deny:      cfg.Deny,
		onError:   cfg.OnError,
		proxy:     proxy,
		v6bits:    cmp.Or(cfg.IPv6Prefix, 64),
		reserve:   cfg.Estimates,
		clock:     cfg.Clock,
		logger:    cmp.Or(cfg.Logger, slog.Default()),
		advertise: cfg.AdvertiseConcurrency && style == ietfHeaders,
	}
	if e.gates, err = newGates(&cfg); err != nil {
		return nil, err
	}
	if e.clock == nil {
		e.clock = core.SystemClock{}
	}
	if e.deny == nil {
		e.deny = bareDeny
	}
	if e.onError == nil {
		e.onError = bareError
	}
	for _, s := range cfg.TrustedProxies {
		p, err := parseTrusted(s)
		if err != nil {
			return nil, fmt.Errorf("admit: trusted proxy %q: %w", s, err)
		}
		e.trusted = append(e.trusted, p)
	}
	if err := e.addRules(cfg.Rules, cfg.Estimates); err != nil {
		return nil, err
	}
	e.buildPolicyTable()
	n := len(e.rules)
	e.pool.New = func() any {
		return &Request{
			e:    e,
			key:  make([]byte, 0, 64),
			buf:  make([]byte, 0, 256),
			reqs: make([]core.Request, 0, n),
			ds:   make([]core.Decision, n),
		}
	}
	return e, nil
}

// checkConfig refuses a Config that New cannot build, saying which field.
func checkConfig(cfg *Config) error {
	switch {
	case cfg.Limiter == nil && (len(cfg.Rules) > 0 || !cfg.admits()):
		return errors.New("admit: Config.Limiter is nil")
	case len(cfg.Rules) == 0 && !cfg.admits():
		return errors.New("admit: Config.Rules is empty, and there is no Concurrency limit")
	case cfg.Concurrency != nil && isNil(cfg.Concurrency):
		return fmt.Errorf("admit: Config.Concurrency is a nil %T", cfg.Concurrency)
	case cfg.Concurrency == nil && (cfg.ConcurrencyKey != nil || cfg.Class != nil):
		return errors.New("admit: Config.ConcurrencyKey or Class is set without a Concurrency limit")
	case cfg.ConcurrencyKey != nil:
		if err := checkKey(cfg.ConcurrencyKey, "ConcurrencyKey"); err != nil {
			return fmt.Errorf("admit: %w", err)
		}
	}
	return checkRanges(cfg)
}

// admits reports whether cfg limits admission beyond its rules: with a
// concurrency limit, or dependencies.
func (cfg *Config) admits() bool { return cfg.Concurrency != nil || len(cfg.Dependencies) > 0 }

// checkRanges refuses a Config's numbers out of range.
func checkRanges(cfg *Config) error {
	switch {
	case len(cfg.Rules) > maxRules:
		return fmt.Errorf("admit: %d rules; at most %d", len(cfg.Rules), maxRules)
	case cfg.IPv6Prefix != 0 && (cfg.IPv6Prefix < 1 || cfg.IPv6Prefix > 128):
		return fmt.Errorf("admit: IPv6Prefix must be 1 to 128, got %d", cfg.IPv6Prefix)
	}
	return nil
}

// parseEnums reads Config.Headers and Config.ProxyHeader, refusing a value
// that is none of theirs.
func parseEnums(cfg *Config) (headerStyle, proxyHeader, error) {
	style, ok := headerStyles[cfg.Headers]
	if !ok {
		return 0, 0, fmt.Errorf("admit: Config.Headers %q is none of \"ietf\", \"draft\", \"legacy\" or \"none\"", cfg.Headers)
	}
	proxy, ok := proxyHeaders[cfg.ProxyHeader]
	if !ok {
		return 0, 0, fmt.Errorf("admit: Config.ProxyHeader %q is none of \"X-Forwarded-For\", \"Forwarded\" or \"X-Real-IP\"", cfg.ProxyHeader)
	}
	return style, proxy, nil
}

// addRules validates rules and adds them to m, refusing two policies named
// alike.
func (e *Engine) addRules(rules []Rule, reserve bool) error {
	names := make(map[string]int, len(rules))
	for i, r := range rules {
		ru, err := newRule(r, reserve)
		if err != nil {
			return fmt.Errorf("admit: rule %d%s: %w", i, ru.label, err)
		}
		for _, p := range ru.policies {
			if j, dup := names[p.Name()]; dup {
				if j == i {
					return fmt.Errorf("admit: rule %d%s lists policy name %q twice%s", i, ru.label, p.Name(), nameHint)
				}
				return fmt.Errorf("admit: rules %d and %d both use policy name %q%s", j, i, p.Name(), nameHint)
			}
			names[p.Name()] = i
			e.queues = e.queues || p.Algorithm() == core.LeakyQueue
		}
		if r.Charge != nil {
			e.charged |= 1 << i
		}
		e.rules = append(e.rules, ru)
	}
	return nil
}

// Middleware is a validated Config, ready to decide requests; New builds
// it. It is safe for concurrent use. An adapter drives it through Decide,
// or DecideHTTP and DecideHTTPUnrouted for frameworks built on net/http's
// types.
type Engine struct {
	limiter *core.Limiter
	rules   []rule
	slots   Slots // Config.Concurrency
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
	logger  *slog.Logger
	gates   []*gate // Config.Dependencies
	// advertise publishes the concurrency limit (Config.AdvertiseConcurrency),
	// in the IETF fields alone, which name their policies.
	advertise bool
	// misplaced is set once a request met ErrRouteUnknown, which is logged
	// the first time only.
	misplaced atomic.Bool
	// policies holds the RateLimit-Policy value of every combination of
	// the rules' policies, when they are few (see buildPolicyTable).
	policies    []string
	pool        sync.Pool // *Request
	settlements sync.Pool // *Settlement
}

// nameHint ends the error of two policies named alike, most often two
// core.PerMinute(5) and their kin, which are named by their rate alone.
const nameHint = ": a policy's name identifies it in the header fields, the problem body and the store's keys; " +
	"give each its own with core.PolicyConfig's Name (core.PerSecond, PerMinute and PerHour name a policy by its rate alone, \"5-per-minute\")"

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

// headerStyle is Config.Headers, parsed.
type headerStyle uint8

const (
	ietfHeaders headerStyle = iota
	draftHeaders
	legacyHeaders
	noHeaders
)

// headerStyles maps the values of Config.Headers to their styles.
var headerStyles = map[string]headerStyle{"": ietfHeaders, "ietf": ietfHeaders, "draft": draftHeaders, "legacy": legacyHeaders, "none": noHeaders}

// proxyHeader is Config.ProxyHeader, parsed.
type proxyHeader uint8

const (
	xForwardedFor proxyHeader = iota
	forwarded
	xRealIP
)

// proxyHeaders maps the values of Config.ProxyHeader to the headers read.
var proxyHeaders = map[string]proxyHeader{"": xForwardedFor, "X-Forwarded-For": xForwardedFor, "Forwarded": forwarded, "X-Real-IP": xRealIP}

// Response is a complete answer written instead of calling the next handler.
type Response struct {
	Status      int    // the status code
	ContentType string // the Content-Type field, none if empty
	Body        []byte // the body
}

// observeOnce hands cfg.Observer (or, if nil, the Limiter's) to the parts of
// cfg that have none, so that the observer an application gives once sees
// all they do.
func observeOnce(cfg *Config) {
	if cfg.Observer == nil && cfg.Limiter != nil {
		cfg.Observer = cfg.Limiter.Observer()
	}
	if cfg.Observer == nil {
		return
	}
	if cfg.Limiter != nil {
		cfg.Limiter.Observe(cfg.Observer)
	}
	if o, ok := cfg.Concurrency.(core.Observable); ok {
		o.Observe(cfg.Observer)
	}
}
