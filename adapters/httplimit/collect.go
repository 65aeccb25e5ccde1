package httplimit

import (
	"errors"
	"fmt"

	"github.com/sluice-go/sluice/core"
)

// collect gathers in r.reqs the requests of the rules that apply to r, and
// sets r.mask and r.combo.
func (m *Middleware) collect(r *Request) error {
	for i := range m.rules {
		ru := &m.rules[i]
		if ru.routes != nil {
			ok, err := matches(ru.routes, r)
			if err != nil && !(ru.Skip != nil && ru.Skip(r)) {
				return fmt.Errorf("httplimit: rule %d%s has Routes: %w", i, ru.label, err)
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
		ks := r.clientText
		if string(key) != ks { // no allocation: a comparison
			ks = string(key)
		}
		r.reqs = append(r.reqs, core.Request{Key: ks, Policy: p, Cost: cost})
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
