package admit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/textproto"
	"reflect"
	"slices"
	"strconv"
)

// ErrNoKey is returned by a key function for a request it has no key for (a
// missing header, no user, an exempt client): the rule does not apply to
// that request. A Select function may return it too.
var ErrNoKey = errors.New("admit: no key for this request")

// Key finds the key a rule limits a request by. Most keys are a KeyFunc,
// as Header, User, Route, Const and Func return; ClientIP and Join return
// Keys of their own, and Except exempts some keys from a rule.
//
// Rule.Key is an interface, as http.Handler is, rather than a function type
// so that a composed key is a value New can inspect: a Join of no keys or
// of a nil one (untyped, or a nil pointer or function of a Key type) is
// refused when the middleware is built, instead of failing every request it
// decides.
type Key interface {
	// AppendKey appends the key of r to dst and returns the extended slice.
	// The bytes are copied into the key the limiter sees, so AppendKey may
	// append views of the request (header values) freely. It returns
	// ErrNoKey (possibly wrapped) to leave the rule out; any other error
	// fails the request through Config.OnError.
	AppendKey(dst []byte, r *Request) ([]byte, error)
}

// KeyFunc is a function used as a Key: the function is AppendKey.
type KeyFunc func(dst []byte, r *Request) ([]byte, error)

// AppendKey calls f(dst, r).
func (f KeyFunc) AppendKey(dst []byte, r *Request) ([]byte, error) { return f(dst, r) }

// Except returns a Key that exempts the requests whose key f gives is one of
// keys, exactly: Header("X-API-Key").Except(internalKey) lets a service
// through with its API key, Route().Except("/healthz") leaves a route out.
// An exempt request has no key (ErrNoKey): the rule leaves it out, without
// asking the store. The exemption trusts what f trusts: whoever sends an
// exempt API key is exempt, so exempt only secrets, never values a client
// can guess.
func (f KeyFunc) Except(keys ...string) Key {
	set := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		set[k] = struct{}{}
	}
	return exceptKeys{key: f, keys: set}
}

// exceptKeys is a KeyFunc's Except: the key, and the keys it exempts.
type exceptKeys struct {
	key  KeyFunc
	keys map[string]struct{}
}

// AppendKey appends the key, or returns ErrNoKey if it is exempt.
func (e exceptKeys) AppendKey(dst []byte, r *Request) ([]byte, error) {
	if e.key == nil {
		return dst, errNilKey // a key New never checked
	}
	b, err := e.key(dst, r)
	if err != nil {
		return b, err
	}
	if _, ok := e.keys[string(b[len(dst):])]; ok { // no allocation: a lookup
		return dst, ErrNoKey
	}
	return b, nil
}

// checkKey returns why New must refuse k, named what in the message: it is
// nil, a typed nil pointer or function (a nil *T whose AppendKey would
// panic on the first request), a Join of no keys or of one it must refuse,
// or an Except of an entry that is not an address.
func checkKey(k Key, what string) error {
	switch k := k.(type) {
	case nil:
		return fmt.Errorf("%s is nil", what)
	case KeyFunc:
		if k == nil {
			return fmt.Errorf("%s is nil", what)
		}
	case ClientIPKey:
		if k.exempt != nil && k.exempt.err != nil {
			return fmt.Errorf("%s: %w", what, k.exempt.err)
		}
	case exceptKeys:
		return checkKey(k.key, what)
	case joined:
		if len(k) == 0 {
			return fmt.Errorf("%s is a Join of no keys", what)
		}
		for i, part := range k {
			if err := checkKey(part, "Join part "+strconv.Itoa(i)); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
	default:
		if isNil(k) {
			return fmt.Errorf("%s is a nil %T", what, k)
		}
	}
	return nil
}

// isNil reports whether v, an interface value that is not nil itself,
// holds a nil pointer, function or map, whose methods would panic on the
// first request: a mistake New refuses.
func isNil(v any) bool {
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map:
		return rv.IsNil()
	}
	return false
}

// KeyError reports to Config.OnError that a rule could not be applied: its
// key function failed, or its Select function did (its own error, or
// a policy not among the rule's Policies).
type KeyError struct {
	Rule   int    // the rule's index in Config.Rules; -1 for Config.ConcurrencyKey
	Policy string // the name of the rule's policy; "" when Select failed
	Err    error  // the key or Select function's error

	label string // the rule's policy names, for a Select failure
}

// Error names the rule or policy and the failure.
func (e *KeyError) Error() string {
	if e.Policy == "" {
		return "admit: policy for rule " + strconv.Itoa(e.Rule) + e.label + ": " + e.Err.Error()
	}
	return "admit: key for policy " + strconv.Quote(e.Policy) + ": " + e.Err.Error()
}

// Unwrap returns the key or Select function's error.
func (e *KeyError) Unwrap() error { return e.Err }

// ClientIP keys by client address (see Request.ClientIP): an IPv4 address,
// an IPv6 prefix of Config.IPv6Prefix bits ("2001:db8::/64"), or "unknown"
// when the peer is not an IP address.
func ClientIP() ClientIPKey { return ClientIPKey{} }

// ClientIPKey is the Key ClientIP returns.
type ClientIPKey struct {
	exempt *exemptIPs // nil: none
}

// Except returns a copy of k that exempts clients from the rule: those whose
// address is one of addrs, single addresses ("192.0.2.7", "2001:db8::1") or
// CIDR prefixes ("10.0.0.0/8", "2001:db8::/32"). An exempt request has no
// key (ErrNoKey): the rule leaves it out, without asking the store.
//
// The address is the one ClientIP keys by, resolved through
// Config.TrustedProxies alone, and matched in full (an IPv6 client is
// keyed by its /64, but exempted by its own address): a client can no more
// claim an exempt address than choose its key. New refuses an entry that is
// not an address or a prefix.
func (k ClientIPKey) Except(addrs ...string) ClientIPKey {
	e := &exemptIPs{addrs: make(map[netip.Addr]struct{})}
	if k.exempt != nil {
		maps.Copy(e.addrs, k.exempt.addrs)
		e.prefixes = slices.Clone(k.exempt.prefixes)
		e.err = k.exempt.err
	}
	for _, s := range addrs {
		p, err := parseTrusted(s)
		switch {
		case err != nil:
			if e.err == nil {
				e.err = fmt.Errorf("Except %q: %w", s, err)
			}
		case p.IsSingleIP():
			e.addrs[p.Addr()] = struct{}{}
		default:
			e.prefixes = append(e.prefixes, p)
		}
	}
	return ClientIPKey{exempt: e}
}

// AppendKey appends the client's key, or returns ErrNoKey if the client is
// exempt.
func (k ClientIPKey) AppendKey(dst []byte, r *Request) ([]byte, error) {
	a := r.ClientIP()
	if k.exempt != nil {
		if k.exempt.err != nil {
			return dst, k.exempt.err // a key New never checked
		}
		if k.exempt.has(a) {
			return dst, ErrNoKey
		}
	}
	switch {
	case !a.IsValid():
		return append(dst, "unknown"...), nil
	case a.Is6() && r.e.v6bits < 128:
		p, err := a.Prefix(r.e.v6bits)
		if err != nil {
			return dst, err
		}
		return p.AppendTo(dst), nil
	case r.clientText != "":
		return append(dst, r.clientText...), nil
	default:
		return a.AppendTo(dst), nil
	}
}

// exemptIPs are the addresses a ClientIPKey exempts.
type exemptIPs struct {
	addrs    map[netip.Addr]struct{} // single addresses
	prefixes []netip.Prefix          // the rest
	err      error                   // why New must refuse the key
}

// has reports whether a, an unmapped client address, is exempt.
func (e *exemptIPs) has(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	if _, ok := e.addrs[a]; ok {
		return true
	}
	for _, p := range e.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Header keys by the first value of a request header, such as an API key.
// A missing or empty header is ErrNoKey.
func Header(name string) KeyFunc {
	name = textproto.CanonicalMIMEHeaderKey(name)
	return func(dst []byte, r *Request) ([]byte, error) {
		v := r.view.Header(name) // name is canonical
		if v == "" {
			return dst, ErrNoKey
		}
		return append(dst, v...), nil
	}
}

// User keys by the user lookup finds in Request.Context: the request's
// context with, in front of it for string keys, the framework's per-request
// values (Gin's and Echo's c.Set, Fiber's c.Locals), where authentication
// middleware usually puts the user. No user is ErrNoKey.
func User(lookup func(ctx context.Context) (user string, ok bool)) KeyFunc {
	return func(dst []byte, r *Request) ([]byte, error) {
		u, ok := lookup(r.Context())
		if !ok {
			return dst, ErrNoKey
		}
		return append(dst, u...), nil
	}
}

// Route keys by the route template (Request.Route); a
// request that matched no route is ErrNoKey, and one whose route the
// adapter cannot know where the middleware runs is ErrRouteUnknown.
func Route() KeyFunc {
	return func(dst []byte, r *Request) ([]byte, error) {
		switch route := r.Route(); route {
		case "":
			return dst, ErrNoKey
		case RouteUnknown:
			return dst, ErrRouteUnknown
		default:
			return append(dst, route...), nil
		}
	}
}

// Const keys every request by s: one limit shared by all.
func Const(s string) KeyFunc {
	return func(dst []byte, _ *Request) ([]byte, error) { return append(dst, s...), nil }
}

// Func adapts a function returning the key as a string.
func Func(f func(r *Request) (string, error)) KeyFunc {
	return func(dst []byte, r *Request) ([]byte, error) {
		k, err := f(r)
		if err != nil {
			return dst, err
		}
		return append(dst, k...), nil
	}
}

// Join keys by all of keys together: each part is written as its length,
// ':', and its bytes ("12:192.0.2.106:/login"), so no choice of parts can
// produce another combination's key. If any part has no key, neither has
// the whole. New refuses a Join of no keys or of a nil one.
func Join(keys ...Key) Key {
	return joined(append([]Key(nil), keys...))
}

// joined is a Join's Key: its parts, which New checks (see checkKey).
type joined []Key

// errNilKey fails an Except of a nil KeyFunc New never checked.
var errNilKey = errors.New("admit: Except of a nil key")

// errBadJoin fails a Join New never checked (one a key function of the
// user's calls), rather than let it key every request alike.
var errBadJoin = errors.New("admit: Join of no keys, or of a nil one")

// AppendKey appends each part's key after its length.
func (j joined) AppendKey(dst []byte, r *Request) ([]byte, error) {
	if len(j) == 0 {
		return dst, errBadJoin
	}
	for _, k := range j {
		if k == nil {
			return dst, errBadJoin
		}
		start := len(dst)
		part, err := k.AppendKey(dst, r)
		if err != nil {
			return dst, err
		}
		// Insert the length before the part: grow, shift, write.
		var num [20]byte
		prefix := strconv.AppendInt(num[:0], int64(len(part)-start), 10)
		prefix = append(prefix, ':')
		n := len(part)
		part = append(part, prefix...)
		copy(part[start+len(prefix):], part[start:n])
		copy(part[start:], prefix)
		dst = part
	}
	return dst, nil
}
