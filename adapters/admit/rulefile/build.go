package rulefile

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// Hooks are the functions a rule file refers to by name, which data
// cannot hold: keys computed in Go, user lookups, costs, skips and a class
// function. A name a file uses that Hooks lack is an error at Compile.
type Hooks struct {
	Keys    map[string]admit.Key                                // {hook: name} keys
	Users   map[string]func(ctx context.Context) (string, bool) // {user: name} keys (admit.User)
	Costs   map[string]func(r *admit.Request) int64             // cost: {hook: name}
	Skips   map[string]func(r *admit.Request) bool              // skip: name
	Classes map[string]func(r *admit.Request) core.Class        // classes: {hook: name}
}

// Env is what a rule file's Config is built with, beside the file: the
// store, the hooks, and the admit.Config fields data cannot set (Deny,
// OnError, Skip, Dependencies, Observer, Clock, Logger, Explain), in Base.
type Env struct {
	Store    core.Store
	Fallback core.Store    // the fallback store for failure.fallback_share
	Options  []core.Option // further options of the Limiter (WithObserver, WithClock)
	Hooks    Hooks
	Base     admit.Config
}

// Rules is a rule file compiled: the admit.Config it describes, and the
// policies it made, which Next reuses where their definitions are the same.
type Rules struct {
	file     *File
	cfg      admit.Config
	policies map[string]*core.Policy
}

// Compile builds the admit.Config f describes on env, and checks it as
// admit.New would; errors name the file, line and field.
func Compile(f *File, env Env) (*Rules, error) {
	return compile(f, env, nil)
}

// Config returns the admit.Config to build the middleware with.
func (r *Rules) Config() admit.Config { return r.cfg }

// File returns the file the rules were compiled from.
func (r *Rules) File() *File { return r.file }

// Policy returns the policy the file names name, nil if none.
func (r *Rules) Policy(name string) *core.Policy { return r.policies[name] }

// Next compiles f, a later version of the file, for Engine.Swap: each
// policy whose definition is unchanged is the very *core.Policy of r, so
// that the store finds its state where it left it. f may change the
// policies, rules and their modes; a change to any other field (headers,
// trusted proxies, concurrency, classes, failure) needs a new middleware,
// and is refused with an error naming it.
func (r *Rules) Next(f *File, env Env) (*Rules, error) {
	if err := sameFixed(r.file, f); err != nil {
		return nil, err
	}
	next, err := compile(f, env, r)
	if err != nil {
		return nil, err
	}
	return next, nil
}

func compile(f *File, env Env, prev *Rules) (*Rules, error) {
	d := &decoder{name: f.name}
	out := &Rules{file: f, policies: make(map[string]*core.Policy, len(f.pols))}
	modes := map[string]float64{}
	defs := map[string]*policyDef{}
	for _, pd := range f.pols {
		p, err := core.NewPolicy(pd.cfg)
		if err != nil {
			var pe *core.PolicyError
			if errors.As(err, &pe) {
				n := pd.fields[pe.Field]
				if n == nil {
					n = pd.n
				}
				return nil, d.err(n, pd.path+"."+snake(pe.Field), "%s", pe.Reason)
			}
			return nil, d.err(pd.n, pd.path, "%v", err)
		}
		if prev != nil {
			if old := prev.policies[p.Name()]; old != nil && samePolicy(old, p) {
				p = old
			}
		}
		out.policies[p.Name()] = p
		modes[p.Name()] = pd.shadow
		defs[p.Name()] = pd
	}
	cfg := env.Base
	cfg.Headers, cfg.ProxyHeader = f.top.headers, f.top.proxyHeader
	cfg.TrustedProxies, cfg.IPv6Prefix = f.top.trusted, f.top.ipv6
	cfg.Estimates, cfg.AdvertiseConcurrency = f.top.estimates, f.top.advertise
	cfg.Shadow = cfg.Shadow || f.top.shadow
	b := &builder{d: d, hooks: env.Hooks, policies: out.policies, modes: modes, used: map[string]string{}}
	for _, rd := range f.rules {
		ru, err := b.rule(rd)
		if err != nil {
			return nil, err
		}
		cfg.Rules = append(cfg.Rules, ru)
	}
	for _, pd := range f.pols {
		if _, ok := b.used[pd.cfg.Name]; !ok {
			return nil, d.err(pd.n, pd.path, "is named by no rule")
		}
	}
	if prev != nil {
		cfg.Limiter, cfg.Concurrency, cfg.ConcurrencyKey = prev.cfg.Limiter, prev.cfg.Concurrency, prev.cfg.ConcurrencyKey
	} else {
		if err := b.limiter(f, env, &cfg); err != nil {
			return nil, err
		}
		if err := b.concurrency(f, &cfg); err != nil {
			return nil, err
		}
	}
	if err := b.classes(f, &cfg); err != nil {
		return nil, err
	}
	check := cfg
	check.Swapper = nil // a check, not an engine to swap
	if _, err := admit.New(check); err != nil {
		return nil, locate(d, f, err)
	}
	if cfg.Swapper == nil {
		if prev != nil {
			cfg.Swapper = prev.cfg.Swapper
		} else {
			cfg.Swapper = new(admit.Swapper)
		}
	}
	out.cfg = cfg
	return out, nil
}

// samePolicy reports whether a and b are the same definition.
func samePolicy(a, b *core.Policy) bool {
	return a.Name() == b.Name() && a.Algorithm() == b.Algorithm() && a.Quota() == b.Quota() &&
		a.Period() == b.Period() && a.Burst() == b.Burst() && a.MaxDelay() == b.MaxDelay()
}

// snake is a PolicyConfig field's name in the file.
func snake(field string) string {
	switch field {
	case "MaxDelay":
		return "max_delay"
	case "MaxQueue":
		return "max_queue"
	case "Name":
		return "name"
	}
	return string(field[0]+'a'-'A') + field[1:]
}

var ruleIndex = regexp.MustCompile(`^admit: rules? (\d+)`)

// locate turns admit.New's error into the file's: at the rule it names.
func locate(d *decoder, f *File, err error) error {
	if m := ruleIndex.FindStringSubmatch(err.Error()); m != nil {
		if i, _ := strconv.Atoi(m[1]); i < len(f.rules) {
			return d.err(f.rules[i].n, f.rules[i].path, "%v", err)
		}
	}
	return d.err(nil, "", "%v", err)
}

// sameFixed refuses a new file that changes what Swap cannot.
func sameFixed(a, b *File) error {
	d := &decoder{name: b.name}
	switch {
	case a.top.headers != b.top.headers:
		return d.err(nil, "headers", "changed: it needs a new middleware")
	case a.top.proxyHeader != b.top.proxyHeader:
		return d.err(nil, "proxy_header", "changed: it needs a new middleware")
	case !slices.Equal(a.top.trusted, b.top.trusted):
		return d.err(nil, "trusted_proxies", "changed: it needs a new middleware")
	case a.top.ipv6 != b.top.ipv6, a.top.estimates != b.top.estimates, a.top.advertise != b.top.advertise, a.top.shadow != b.top.shadow:
		return d.err(nil, "ipv6_prefix, estimates, advertise_concurrency or shadow", "changed: it needs a new middleware")
	case (a.conc == nil) != (b.conc == nil) || a.conc != nil && (a.conc.limit != b.conc.limit || a.conc.perKey != b.conc.perKey ||
		a.conc.q != b.conc.q || a.conc.maxWait != b.conc.maxWait || a.conc.maxLatency != b.conc.maxLatency):
		return d.err(nil, "concurrency", "changed: it needs a new middleware")
	case a.fail.closed != b.fail.closed || a.fail.retryAfter != b.fail.retryAfter || a.fail.share != b.fail.share:
		return d.err(nil, "failure", "changed: it needs a new middleware")
	}
	return nil
}

type builder struct {
	d        *decoder
	hooks    Hooks
	policies map[string]*core.Policy
	modes    map[string]float64
	used     map[string]string // policy name -> the rule's path
}

func (b *builder) policy(name string, n *Node, path string) (*core.Policy, error) {
	p := b.policies[name]
	if p == nil {
		return nil, b.d.err(n, path, "names policy %q, which policies does not define", name)
	}
	if other, ok := b.used[name]; ok && other != path {
		return nil, b.d.err(n, path, "names policy %q, which %s names too: a policy belongs to one rule", name, other)
	}
	b.used[name] = path
	return p, nil
}

func (b *builder) rule(rd *ruleDef) (admit.Rule, error) {
	var ru admit.Rule
	var names []string
	if rd.tiers == nil {
		p, err := b.policy(rd.policy, rd.polNode, rd.path+".policy")
		if err != nil {
			return ru, err
		}
		ru.Policy, names = p, []string{p.Name()}
	} else {
		sel, set, err := b.tiers(rd)
		if err != nil {
			return ru, err
		}
		ru.Policies, ru.Select = set, sel
		for _, p := range set {
			names = append(names, p.Name())
		}
	}
	ru.Shadow = b.modes[names[0]]
	for _, name := range names[1:] {
		if b.modes[name] != ru.Shadow {
			return ru, b.d.err(rd.n, rd.path, "has policies %q and %q of different modes: one rule, one mode", names[0], name)
		}
	}
	var err error
	if ru.Key, err = b.key(rd.key); err != nil {
		return ru, err
	}
	ru.Routes = rd.routes
	switch {
	case rd.costFn != "":
		if ru.Cost = b.hooks.Costs[rd.costFn]; ru.Cost == nil {
			return ru, b.d.err(rd.n, rd.path+".cost.hook", "names %q, which Hooks.Costs lacks", rd.costFn)
		}
	case rd.cost > 1:
		c := rd.cost
		ru.Cost = func(*admit.Request) int64 { return c }
	}
	if rd.skip != "" {
		if ru.Skip = b.hooks.Skips[rd.skip]; ru.Skip == nil {
			return ru, b.d.err(rd.n, rd.path+".skip", "names %q, which Hooks.Skips lacks", rd.skip)
		}
	}
	if len(rd.charge) > 0 {
		ranges := rd.charge
		ru.Charge = func(status int) bool {
			for _, r := range ranges {
				if status >= r[0] && status <= r[1] {
					return true
				}
			}
			return false
		}
	}
	return ru, nil
}

// tiers builds a rule's Select: the value of its by key picks the policy.
func (b *builder) tiers(rd *ruleDef) (func(*admit.Request) (*core.Policy, error), []*core.Policy, error) {
	t := rd.tiers
	by, err := b.key(t.by)
	if err != nil {
		return nil, nil, err
	}
	pick := make(map[string]*core.Policy, len(t.vals))
	var set []*core.Policy
	add := func(name string, n *Node) (*core.Policy, error) {
		p := b.policies[name]
		if p == nil {
			return nil, b.d.err(n, rd.path+".tiers", "names policy %q, which policies does not define", name)
		}
		if !slices.Contains(set, p) {
			if _, err := b.policy(name, n, rd.path); err != nil {
				return nil, err
			}
			set = append(set, p)
		}
		return p, nil
	}
	for i, v := range t.vals {
		p, err := add(t.names[i], t.nodes[i])
		if err != nil {
			return nil, nil, err
		}
		pick[v] = p
	}
	var def *core.Policy
	if t.def != "" {
		if def, err = add(t.def, t.defN); err != nil {
			return nil, nil, err
		}
	}
	sel := func(r *admit.Request) (*core.Policy, error) {
		var buf [64]byte
		v, err := by.AppendKey(buf[:0], r)
		switch {
		case errors.Is(err, admit.ErrNoKey) && def != nil:
			return def, nil
		case err != nil:
			return nil, err
		}
		if p := pick[string(v)]; p != nil {
			return p, nil
		}
		if def != nil {
			return def, nil
		}
		return nil, fmt.Errorf("rulefile: tier %.64q is not listed, and the rule has no default", v)
	}
	return sel, set, nil
}

// methodKey keys by the request method.
var methodKey = admit.KeyFunc(func(dst []byte, r *admit.Request) ([]byte, error) { return append(dst, r.Method()...), nil })

func (b *builder) key(k *keyDef) (admit.Key, error) {
	var f admit.KeyFunc
	switch k.kind {
	case "client-ip":
		c := admit.ClientIP()
		if len(k.except) > 0 {
			c = c.Except(k.except...)
		}
		return c, nil
	case "route":
		f = admit.Route()
	case "method":
		f = methodKey
	case "header":
		f = admit.Header(k.arg)
	case "const":
		f = admit.Const(k.arg)
	case "user":
		lookup := b.hooks.Users[k.arg]
		if lookup == nil {
			return nil, b.d.err(k.n, k.path+".user", "names %q, which Hooks.Users lacks", k.arg)
		}
		f = admit.User(lookup)
	case "hook":
		h := b.hooks.Keys[k.arg]
		if h == nil {
			return nil, b.d.err(k.n, k.path+".hook", "names %q, which Hooks.Keys lacks", k.arg)
		}
		return h, nil
	case "join":
		parts := make([]admit.Key, len(k.parts))
		for i, p := range k.parts {
			var err error
			if parts[i], err = b.key(p); err != nil {
				return nil, err
			}
		}
		return admit.Join(parts...), nil
	}
	if len(k.except) > 0 {
		return f.Except(k.except...), nil
	}
	return f, nil
}

// limiter builds the Limiter on env's store with the file's failure mode.
func (b *builder) limiter(f *File, env Env, cfg *admit.Config) error {
	if env.Store == nil {
		if cfg.Limiter != nil {
			return nil // Base's, which decides the failure mode
		}
		return errors.New("rulefile: Env.Store is nil, and Env.Base has no Limiter")
	}
	opts := slices.Clone(env.Options)
	if f.fail.closed {
		opts = append(opts, core.WithFailClosed(f.fail.retryAfter))
	}
	if f.fail.share > 0 {
		if env.Fallback == nil {
			return b.d.err(f.fail.n, "failure.fallback_share", "needs Env.Fallback, the store to fall back to")
		}
		opts = append(opts, core.WithFallback(env.Fallback, f.fail.share))
	}
	l, err := core.NewLimiter(env.Store, opts...)
	if err != nil {
		return b.d.err(f.fail.n, "failure", "%v", err)
	}
	cfg.Limiter = l
	return nil
}

// concurrency builds the file's concurrency limit, if it has one.
func (b *builder) concurrency(f *File, cfg *admit.Config) error {
	c := f.conc
	if c == nil {
		return nil
	}
	bc := backpressure.Config{Name: "concurrency", PerKey: c.perKey, Queue: c.q, MaxWait: c.maxWait, MaxLatency: c.maxLatency, Clock: cfg.Clock}
	if c.limit > 0 {
		bc.Controller = backpressure.Static(c.limit)
	}
	l, err := backpressure.New(bc)
	if err != nil {
		return b.d.err(c.n, "concurrency", "%v", err)
	}
	cfg.Concurrency = l
	if c.key != nil {
		if cfg.ConcurrencyKey, err = b.key(c.key); err != nil {
			return err
		}
	}
	return nil
}

// classes builds Config.Class from the file's classes.
func (b *builder) classes(f *File, cfg *admit.Config) error {
	c := f.classes
	if c == nil {
		return nil
	}
	if c.hook != "" {
		if cfg.Class = b.hooks.Classes[c.hook]; cfg.Class == nil {
			return b.d.err(c.n, "classes.hook", "names %q, which Hooks.Classes lacks", c.hook)
		}
		return nil
	}
	critical, err := routeSet(b.d, c.n, "classes.critical", c.critical)
	if err != nil {
		return err
	}
	sheddable, err := routeSet(b.d, c.n, "classes.sheddable", c.sheddable)
	if err != nil {
		return err
	}
	cfg.Class = func(r *admit.Request) core.Class {
		switch {
		case critical.has(r):
			return core.Critical
		case sheddable.has(r):
			return core.Sheddable
		}
		return core.Default
	}
	return nil
}

var methodRoute = regexp.MustCompile(`^[A-Z]+ /`)

// routes is a set of "METHOD /template" and "/template" entries.
type routes map[string]bool

func routeSet(d *decoder, n *Node, field string, list []string) (routes, error) {
	s := routes{}
	for _, e := range list {
		if e == "" || e[0] != '/' && !methodRoute.MatchString(e) {
			return nil, d.err(n, field, "entry %q is neither \"METHOD /template\" nor \"/template\"", e)
		}
		s[e] = true
	}
	return s, nil
}

func (s routes) has(r *admit.Request) bool {
	if len(s) == 0 {
		return false
	}
	route := r.Route()
	if s[route] {
		return true
	}
	m := r.Method()
	if m == "HEAD" {
		m = "GET"
	}
	return s[m+" "+route] // allocates only for the requests of a Config with classes
}
