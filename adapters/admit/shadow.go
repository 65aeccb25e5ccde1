package admit

import (
	"errors"
	"fmt"
	"math"

	"github.com/sluice-go/sluice/core"
)

// checkShadow validates Rule.Shadow and sets the rule's enforced share.
func (ru *rule) checkShadow(reserve bool) error {
	s := ru.Shadow
	switch {
	case s == 0:
		return nil
	case !(s > 0 && s <= 1):
		return fmt.Errorf("Shadow must be 0 to 1 (the share of keys in shadow), got %v", s)
	case ru.Charge != nil:
		return errors.New("Shadow cannot be combined with Charge, whose units are settled after the handler: shadow the rule without Charge")
	case reserve:
		return errors.New("Shadow cannot be combined with Config.Estimates, whose units are reconciled after the handler: limit with the shadow rule in a middleware of its own")
	}
	for _, p := range ru.policies {
		if p.Algorithm() == core.LeakyQueue {
			return fmt.Errorf("Shadow cannot apply to %s, a LeakyQueue, whose requests wait for their turn", p.Name())
		}
	}
	if s < 1 {
		ru.enforce = uint64(math.Ldexp(1-s, 64))
	}
	return nil
}

// enforced reports whether the rule is enforced for key under p: whether
// the key's hash, seeded with the policy's name, falls in the enforced
// share. The hash is FNV-1a, finished with splitmix64's mixer, so that it
// is the same on every instance and spreads similar keys apart.
func (ru *rule) enforced(p *core.Policy, key []byte) bool {
	if ru.enforce == 0 {
		return false
	}
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	name := p.Name()
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * prime
	}
	h = (h ^ 0xff) * prime // no name's bytes run into the key's
	for _, c := range key {
		h = (h ^ uint64(c)) * prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h < ru.enforce
}

// takeShadow decides r's shadow layers, once its enforced layers have
// allowed it (or none applied): they take their units as enforcing them
// would, and the observer sees their decisions as shadow ones. Their
// denials never deny the request.
func (e *Engine) takeShadow(r *Request) {
	if r.x != nil {
		r.x.sds = make([]core.Decision, len(r.shadow))
		_, _ = e.limiter.TakeShadow(r.view.Context(), r.shadow, r.x.sds)
		return
	}
	// The enforced layers' decisions in r.ds are read no more once they
	// allowed the request: their room (one per rule) serves.
	ds := r.ds
	if len(ds) < len(r.shadow) {
		ds = make([]core.Decision, len(r.shadow))
	}
	// The error is a malformed request's, which collect never makes; the
	// store's failures are the limiter's to report.
	_, _ = e.limiter.TakeShadow(r.view.Context(), r.shadow, ds)
}

// indexPolicies indexes a large Policies, so that choose finds Select's
// choice without a scan.
func (ru *rule) indexPolicies() {
	if len(ru.policies) < 16 {
		return
	}
	ru.index = make(map[*core.Policy]int, len(ru.policies))
	for j, p := range ru.policies {
		ru.index[p] = j
	}
}

// policyIndex maps a rule's policies to their indexes.
type policyIndex = map[*core.Policy]int
