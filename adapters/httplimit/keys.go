package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/textproto"
	"reflect"
	"strconv"

	"github.com/sluice-go/sluice/adapters/adapterkit"
)

// ErrNoKey is returned by a key function for a request it has no key for (a
// missing header, no user): the rule does not apply to that request.
var ErrNoKey = errors.New("httplimit: no key for this request")

// Key finds the key a rule limits a request by. Most keys are a KeyFunc,
// as ClientIP, Header, User, Route, Const and Func return; Join returns a
// Key of its own.
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

// checkKey returns why New must refuse k, named what in the message: it is
// nil, a typed nil pointer or function (a nil *T whose AppendKey would
// panic on the first request), or a Join of no keys or of one it must
// refuse.
func checkKey(k Key, what string) error {
	switch k := k.(type) {
	case nil:
		return fmt.Errorf("%s is nil", what)
	case KeyFunc:
		if k == nil {
			return fmt.Errorf("%s is nil", what)
		}
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
		if v := reflect.ValueOf(k); (v.Kind() == reflect.Pointer || v.Kind() == reflect.Func) && v.IsNil() {
			return fmt.Errorf("%s is a nil %T", what, k)
		}
	}
	return nil
}

// KeyError reports a key function's failure to Config.OnError.
type KeyError struct {
	Policy string // the name of the rule's policy
	Err    error  // the key function's error
}

// Error names the policy and the key function's error.
func (e *KeyError) Error() string {
	return "httplimit: key for policy " + strconv.Quote(e.Policy) + ": " + e.Err.Error()
}

// Unwrap returns the key function's error.
func (e *KeyError) Unwrap() error { return e.Err }

// ClientIP keys by client address (see Request.ClientIP): an IPv4 address,
// an IPv6 prefix of Config.IPv6Prefix bits ("2001:db8::/64"), or "unknown"
// when the peer is not an IP address.
func ClientIP() KeyFunc {
	return func(dst []byte, r *Request) ([]byte, error) {
		a := r.ClientIP()
		switch {
		case !a.IsValid():
			return append(dst, "unknown"...), nil
		case a.Is6() && r.m.v6bits < 128:
			p, err := a.Prefix(r.m.v6bits)
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
		case adapterkit.RouteUnknown:
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

// errBadJoin fails a Join New never checked (one a key function of the
// user's calls), rather than let it key every request alike.
var errBadJoin = errors.New("httplimit: Join of no keys, or of a nil one")

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
