//lint:file-ignore ST1005 a rule's errors begin with the name of the Rule field at fault, which New prefixes with the rule ("rule 0 (per-ip): Policy is nil")

package admit

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-go/sluice/core"
)

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
	// Config.OnError with a *KeyError saying so (and naming the policy), never
	// a silent default; an error of Select's own fails it too, except
	// ErrNoKey, which leaves the rule out. The header fields and problem
	// bodies name the chosen policy, and the store keeps a key's state per
	// policy: a key that moves to another policy starts afresh there.
	Policies []*core.Policy
	// Select chooses the request's policy among Policies (see Policies).
	Select func(r *Request) (*core.Policy, error)
	// Key finds the limited key. Required.
	Key Key
	// Cost returns the request's cost under the rule; nil means 1. A cost
	// of zero or less leaves the rule out for that request.
	Cost func(r *Request) int64
	// Charge, if set, charges only the requests whose response it selects
	// by status: failed logins, with func(status int) bool { return status
	// >= 400 }, which counts only them, however many logins succeed. The
	// cost is taken before the handler runs, together with the other
	// rules' (a request that does not fit is denied as any other); once
	// the handler has answered, the units are kept if Charge returns true
	// for the status, and given back otherwise. A handler that panics
	// counts as answering 500.
	//
	// So at every moment, the units kept plus the units of requests still
	// running never exceed what the policy grants: the selected requests
	// never pass the limit, however many arrive at once, and a request's
	// units stay taken only if its response was selected. The price is
	// that a request still running holds its units even if it ends up
	// given them back: while many run at once, a request may be denied
	// that would fit once they have finished. The header fields report the
	// standing once the status is known, with the request's units given
	// back if they are (see Settlement.SetFields). Units whose give-back
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

// errUnlistedPolicy is the error of a Select function that returned a
// policy not among its rule's Policies, or nil.
var errUnlistedPolicy = errors.New("admit: Select chose a policy not among the rule's Policies")

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

// maxRules bounds the rules of one Config: a request's rule set is a
// 64-bit mask.
const maxRules = 64

// policyTableSize is the most RateLimit-Policy values precomputed, one per
// combination of the rules' policies.
const policyTableSize = 256

// buildPolicyTable precomputes the RateLimit-Policy value of every
// combination of policies, when they are few: a request's combination is
// the index sum of each applied rule's weight times 1 + the index of its
// policy (a number whose digits, one per rule, say which of the rule's
// policies applied, or none).
func (e *Engine) buildPolicyTable() {
	size := 1
	for i := range e.rules {
		e.rules[i].weight = size
		size *= len(e.rules[i].policies) + 1
		if size > policyTableSize {
			return
		}
	}
	e.policies = make([]string, size)
	var b []byte
	for combo := range e.policies {
		b = b[:0]
		for i := range e.rules {
			ru := &e.rules[i]
			if digit := combo / ru.weight % (len(ru.policies) + 1); digit > 0 {
				b = appendItem(b, ru.items[digit-1])
			}
		}
		e.policies[combo] = string(b)
	}
}
