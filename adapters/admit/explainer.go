package admit

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"net/textproto"

	"github.com/sluice-go/sluice/adapters/admit/explain"
	"github.com/sluice-go/sluice/core"
)

// Explain decides the request v describes as Decide does, answering
// through w, and explains the decision (see package explain). The rules'
// functions (Key, Select, Cost, Skip) are called once more to tell why each
// rule applied or not. The Explanation holds the keys: hash them
// (Explanation.Hash) before they leave the process.
func (e *Engine) Explain(v View, w Writer) (Verdict, *explain.Explanation) {
	return e.current().explain(v, w)
}

// explainConfig is Config.Explain, checked.
type explainConfig struct {
	digest [sha256.Size]byte // the secret's
	secret []byte
	header string // canonical
	result string // the response header, Header + "-Result"
	record func(*explain.Explanation)
}

// minExplainSecret is the shortest Config.Explain.Secret New accepts.
const minExplainSecret = 16

func newExplainConfig(o explain.Options) (explainConfig, error) {
	if o.Secret == "" {
		if o.Header != "" || o.Record != nil {
			return explainConfig{}, errors.New("admit: Config.Explain has a Header or Record but no Secret: a header anyone may send would explain every decision to anyone")
		}
		return explainConfig{}, nil
	}
	if len(o.Secret) < minExplainSecret {
		return explainConfig{}, fmt.Errorf("admit: Config.Explain.Secret is %d bytes; at least %d, random, lest a client guess it", len(o.Secret), minExplainSecret)
	}
	h := textproto.CanonicalMIMEHeaderKey(o.Header)
	if h == "" {
		h = "Sluice-Explain"
	}
	return explainConfig{digest: sha256.Sum256([]byte(o.Secret)), secret: []byte(o.Secret), header: h, result: h + "-Result", record: o.Record}, nil
}

// explaining reports whether v carries the explain header with the
// secret. The comparison is of digests, in constant time, so that neither
// the time taken nor the length tells a guess how close it came.
func (e *Engine) explaining(v View) bool {
	if e.expl.secret == nil {
		return false
	}
	got := v.Header(e.expl.header)
	if got == "" {
		return false
	}
	d := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(d[:], e.expl.digest[:]) == 1
}

// explainHeader decides a request that asked for its explanation with the
// secret: the explanation, its keys hashed, goes back in the result header
// (set before the response is written), and, whole, to Record.
func (e *Engine) explainHeader(v View, w Writer) Verdict {
	return e.explainWith(v, w, func(x *explain.Explanation) {
		if e.expl.record != nil {
			c := *x
			c.Rules = append([]explain.Rule(nil), x.Rules...)
			e.expl.record(&c)
		}
		x.Hash(e.expl.secret)
		if b, err := json.Marshal(x); err == nil {
			w.SetHeader(e.expl.result, string(b))
		}
	})
}

func (e *Engine) explain(v View, w Writer) (Verdict, *explain.Explanation) {
	var x *explain.Explanation
	verdict := e.explainWith(v, w, func(got *explain.Explanation) { x = got })
	return verdict, x
}

// explainWith decides v, holding back any response written through w
// until then has seen the explanation.
func (e *Engine) explainWith(v View, w Writer, then func(*explain.Explanation)) Verdict {
	hw := &holdWriter{Writer: w}
	values, _ := v.(ValueGetter)
	r := e.acquire(v, values)
	r.x = &explainer{}
	verdict := e.decide(r, hw)
	x := r.x.build(e, r, verdict, hw)
	e.release(r)
	e.pool.Put(r)
	then(x)
	if hw.held {
		w.WriteResponse(hw.status, hw.ctype, hw.body)
	}
	return verdict
}

// holdWriter holds back the response the engine writes, so that a header
// can be set after the decision.
type holdWriter struct {
	Writer
	status int
	ctype  string
	body   []byte
	held   bool
}

func (h *holdWriter) WriteResponse(status int, contentType string, body []byte) {
	h.status, h.ctype, h.body, h.held = status, contentType, append([]byte(nil), body...), true
}

// explainer records what decide did, for the explanation.
type explainer struct {
	d    core.Decision // the enforced layers' reported decision
	err  error
	took bool
	sds  []core.Decision // the shadow layers' decisions, if they were decided
}

func (x *explainer) taken(d core.Decision, err error) { x.d, x.err, x.took = d, err, true }

// build explains the decision of r, which decide has just made.
func (x *explainer) build(e *Engine, r *Request, verdict Verdict, hw *holdWriter) *explain.Explanation {
	ex := &explain.Explanation{Proceed: verdict.Proceed}
	if hw.held {
		ex.Status = hw.status
	}
	if x.took && x.err == nil && x.d.Policy != nil {
		ex.Decider = x.d.Policy.Name()
		if x.d.Degraded {
			ex.Failure = failureOf(x.d)
		}
	}
	if x.err != nil {
		ex.Error = x.err.Error()
	}
	if !verdict.Proceed && hw.held && x.d.Allowed {
		switch {
		case r.denial.Shed != nil:
			ex.Decider = concurrencyKeyName
		case r.denial.Dependency != "":
			ex.Decider = "(dependency " + r.denial.Dependency + ")"
		}
	}
	shadowAt := 0
	for i := range e.rules {
		ru := &e.rules[i]
		er := explain.Rule{Index: i}
		for _, p := range ru.policies {
			er.Policies = append(er.Policies, p.Name())
		}
		key, p, cost, why, err := explainRule(ru, r)
		if why != "" {
			er.Why = why
			if err != nil && ex.Error == "" {
				ex.Error = err.Error()
			}
			ex.Rules = append(ex.Rules, er)
			continue
		}
		er.Applied, er.Key, er.Policy, er.Cost = true, key, p.Name(), cost
		if r.mask&(1<<i) != 0 {
			layer := bits.OnesCount64(r.mask & (1<<i - 1))
			if d, ok := x.layer(r, layer, p); ok {
				fill(&er, d, x.d.Allowed, cost)
			}
		} else if shadowAt < len(r.shadowRule) && int(r.shadowRule[shadowAt]) == i {
			er.Shadow = true
			if x.sds != nil {
				all := true
				for _, d := range x.sds {
					all = all && d.Allowed
				}
				fill(&er, x.sds[shadowAt], all, cost)
			}
			shadowAt++
		}
		ex.Rules = append(ex.Rules, er)
	}
	return ex
}

// layer returns the decision of r's enforced layer under p, if known: each
// layer's when TakeAll or TakeTurn decided them, the reported one's
// otherwise (a reservation reports its decisive layer only).
func (x *explainer) layer(r *Request, layer int, p *core.Policy) (core.Decision, bool) {
	switch {
	case !x.took || x.err != nil:
		return core.Decision{}, false
	case r.decided:
		return r.ds[layer], true
	case len(r.reqs) == 1 || x.d.Policy == p:
		return x.d, true
	}
	return core.Decision{}, false
}

// fill sets er's answer and standing from d, its layer's decision, with
// cost taken if the request took its units (taken).
func fill(er *explain.Rule, d core.Decision, taken bool, cost int64) {
	er.Decided, er.Allowed = true, d.Allowed
	er.After = explain.State{Remaining: d.Remaining, Limit: d.Limit, ResetAfter: d.ResetAfter, RetryAfter: d.RetryAfter}
	er.Before = er.After
	if taken && d.Allowed && d.Limit > 0 {
		er.Before.Remaining = min(d.Remaining+cost, d.Limit)
		er.Before.RetryAfter = 0
	}
}

// failureOf names the failure mode that decided d, a Degraded decision.
func failureOf(d core.Decision) string {
	switch {
	case d.Limit != 0:
		return "fallback"
	case d.Allowed:
		return "fail-open"
	}
	return "fail-closed"
}

// explainRule walks ru for r as collect does, and returns the key, policy
// and cost it applied with, or why it did not apply (and the error that
// failed the request, if that is why).
func explainRule(ru *rule, r *Request) (key string, p *core.Policy, cost int64, why string, err error) {
	if ru.routes != nil {
		ok, err := matches(ru.routes, r)
		if err != nil && !(ru.Skip != nil && ru.Skip(r)) {
			return "", nil, 0, "error", err
		}
		if !ok {
			return "", nil, 0, "route", nil
		}
	}
	if ru.Skip != nil && ru.Skip(r) {
		return "", nil, 0, "skip", nil
	}
	cost = 1
	if ru.Cost != nil {
		if cost = ru.Cost(r); cost <= 0 {
			return "", nil, 0, "cost", nil
		}
	}
	p = ru.Policy
	if ru.Select != nil {
		if p, _, err = ru.choose(r); err != nil {
			if errors.Is(err, ErrNoKey) {
				return "", nil, 0, "select", nil
			}
			return "", nil, 0, "error", err
		}
	}
	b, err := ru.Key.AppendKey(nil, r)
	if err != nil {
		if errors.Is(err, ErrNoKey) {
			return "", nil, 0, "no key", nil
		}
		return "", nil, 0, "error", err
	}
	return string(b), p, cost, "", nil
}
