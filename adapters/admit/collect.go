package admit

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/sluice-go/sluice/core"
)

// collect gathers in r.reqs the requests of the rules that apply to r, and
// sets r.mask and r.combo.
func (e *Engine) collect(r *Request) error {
	for i := range e.rules {
		ru := &e.rules[i]
		if ru.routes != nil {
			ok, err := matches(ru.routes, r)
			if err != nil && !(ru.Skip != nil && ru.Skip(r)) {
				return fmt.Errorf("admit: rule %d%s has Routes: %w", i, ru.label, err)
			}
			if !ok {
				continue
			}
		}
		if ru.Skip != nil && ru.Skip(r) {
			continue
		}
		cost := int64(1)
		if ru.Cost != nil {
			if cost = ru.Cost(r); cost <= 0 {
				continue
			}
		}
		p, j := ru.Policy, 0
		if ru.Select != nil {
			var err error
			if p, j, err = ru.choose(r); err != nil {
				if errors.Is(err, ErrNoKey) {
					continue
				}
				return &KeyError{Rule: i, Err: err, label: ru.label}
			}
		}
		key, err := ru.Key.AppendKey(r.key[:0], r)
		if err != nil {
			if errors.Is(err, ErrNoKey) {
				continue
			}
			return &KeyError{Rule: i, Policy: p.Name(), Err: err}
		}
		if cap(key) > cap(r.key) {
			r.key = key[:0] // keep the grown buffer
		}
		r.reqs = append(r.reqs, core.Request{Key: r.keyString(key), Policy: p, Cost: cost})
		r.mask |= 1 << i
		r.combo += ru.weight * (j + 1)
	}
	return nil
}

// choose returns the policy Select chooses for r, and its index in the
// rule's policies.
func (ru *rule) choose(r *Request) (*core.Policy, int, error) {
	p, err := ru.Select(r)
	if err != nil {
		return nil, 0, err
	}
	for j, q := range ru.policies {
		if q == p {
			return p, j, nil
		}
	}
	if p == nil {
		return nil, 0, fmt.Errorf("%w: nil", errUnlistedPolicy)
	}
	return nil, 0, fmt.Errorf("%w: %q", errUnlistedPolicy, p.Name())
}

// keyString returns key as a string that outlives the request: the client's
// own text if it is that (see Request.clientText), or a copy. Short copies
// are carved from a slab of keySlab bytes the pooled Request keeps, so that
// most requests allocate no key: the slab is never written where a string
// was carved, and is freed once the last of its strings is. A key kept
// long (a store's table of denials, an Observer's) keeps its slab: a store
// that keeps keys keeps copies (see core.Request).
func (r *Request) keyString(key []byte) string {
	if string(key) == r.clientText { // no allocation: a comparison
		return r.clientText
	}
	return r.carve(key)
}

// carve returns a copy of b, from the Request's slab if b is short (see
// keyString). A denial's field values are carved too.
func (r *Request) carve(b []byte) string {
	if len(b) > maxCarved {
		return string(b)
	}
	if len(r.slab) < len(b) {
		r.slab = make([]byte, slabSize)
	}
	n := copy(r.slab, b)
	s := unsafe.String(unsafe.SliceData(r.slab), n)
	r.slab = r.slab[n:]
	return s
}

// slabSize is the size of the slabs carve copies from, and maxCarved the
// longest copy it carves: an IPv6 /64 prefix, a user ID or an API key's
// hash fits, and a slab serves at least four requests (sixteen IPv4
// clients).
const (
	slabSize  = 256
	maxCarved = 64
)
