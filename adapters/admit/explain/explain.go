// Package explain describes why the admission engine decided a request as
// it did: which rules applied and which did not (and why), the key each
// produced, each policy's standing before and after, which policy decided,
// and the failure mode if the store failed. admit.Engine.Explain returns
// one for a request; admit.Config.Explain lets a trusted operator ask for
// one with a header on a single request; package explainhttp keeps the
// latest and serves them to operators as JSON.
//
// Keys identify clients (addresses, API keys, users): an Explanation holds
// them for Go code, and Hash replaces them with a keyed digest before it
// leaves the process, which is what everything in this module does.
package explain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Explanation is why one request was decided as it was.
type Explanation struct {
	// Proceed reports that the request went on to its handler.
	Proceed bool `json:"proceed"`
	// Status is the status it was answered with when it did not proceed.
	Status int `json:"status,omitempty"`
	// Decider names the policy whose decision was reported: the enforced
	// policy that denied the request, or, if it was allowed, the one
	// closest to its limit; "" when no rule applied.
	Decider string `json:"decider,omitempty"`
	// Failure is how the limiter decided when its store failed:
	// "fail-open", "fail-closed" or "fallback"; "" when it did not fail.
	Failure string `json:"failure,omitempty"`
	// Error is the error that failed the request before any decision (a
	// key or Select function's), "" if none.
	Error string `json:"error,omitempty"`
	// Rules holds every rule of the engine, in order.
	Rules []Rule `json:"rules"`
}

// Rule is what one rule did with the request.
type Rule struct {
	Index    int      `json:"index"`
	Policies []string `json:"policies"` // the rule's policies: one, or a tier's set
	// Applied reports that the rule applied; Why says why not otherwise:
	// "route", "skip", "cost", "no key", "select", "error".
	Applied bool   `json:"applied"`
	Why     string `json:"why,omitempty"`
	// Key is the key the rule produced; never rendered (see Hash).
	Key     string `json:"-"`
	KeyHash string `json:"key_hash,omitempty"`
	Policy  string `json:"policy,omitempty"` // the policy applied
	Cost    int64  `json:"cost,omitempty"`
	// Shadow reports that the rule's decision for this key was recorded,
	// not enforced (admit.Rule.Shadow).
	Shadow bool `json:"shadow,omitempty"`
	// Decided reports that the store was asked (a shadow rule is not when
	// the enforced ones deny); Allowed is its answer.
	Decided bool `json:"decided"`
	Allowed bool `json:"allowed"`
	// Before and After are the key's standing under the policy before and
	// after the request: equal when the request took nothing.
	Before State `json:"before"`
	After  State `json:"after"`
}

// State is a key's standing under a policy.
type State struct {
	Remaining  int64         `json:"remaining"`
	Limit      int64         `json:"limit"`
	ResetAfter time.Duration `json:"reset_after_ns"`
	RetryAfter time.Duration `json:"retry_after_ns,omitempty"`
}

// Hash replaces every key of x with the first 16 bytes of its HMAC-SHA256
// under secret, in hex, so that an operator can match a request's
// explanations without learning its key.
func (x *Explanation) Hash(secret []byte) {
	for i := range x.Rules {
		if k := x.Rules[i].Key; k != "" {
			m := hmac.New(sha256.New, secret)
			m.Write([]byte(k))
			x.Rules[i].KeyHash = hex.EncodeToString(m.Sum(nil)[:16])
			x.Rules[i].Key = ""
		}
	}
}

// Options let a trusted operator ask for the explanation of one request
// with a header (admit.Config.Explain). The zero Options explain nothing.
type Options struct {
	// Secret is the header's value that asks for an explanation, at least
	// 16 bytes; empty turns the header off. A request whose header is
	// anything else is decided as every other, with no trace.
	Secret string
	// Header is the request header that carries Secret; default
	// "Sluice-Explain". The explanation, its keys hashed under Secret,
	// goes back in the response header of the same name plus "-Result".
	Header string
	// Record, if set, also receives each explanation the header asked
	// for, keys included (an explainhttp.Recorder's Record, say).
	Record func(*Explanation)
}
