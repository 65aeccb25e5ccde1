// Package explainhttp serves operators the latest explanations of the
// admission engine's decisions, as JSON: a Recorder keeps them (the ones
// a trusted operator asked for with admit.Config.Explain's header, and
// any an application records from admit.Engine.Explain), its keys hashed,
// and is itself the http.Handler. Nothing mounts it: mount it on an
// operators' listener or behind their authentication, never on the
// public one.
package explainhttp

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/sluice-go/sluice/adapters/admit/explain"
)

// Recorder keeps the latest explanations, at most its size, with their keys
// replaced by digests (explain.Explanation.Hash): it never holds a key.
type Recorder struct {
	secret []byte
	mu     sync.Mutex
	ring   []*explain.Explanation
	next   int
	full   bool
}

// NewRecorder returns a Recorder of the latest size explanations (1 to
// 100,000), hashing keys under secret (at least 16 bytes: the digests of
// a small key space, IPv4 addresses, are otherwise reversed by trying
// them all).
func NewRecorder(size int, secret []byte) (*Recorder, error) {
	if size < 1 || size > 100_000 {
		return nil, errors.New("explainhttp: size must be 1 to 100,000")
	}
	if len(secret) < 16 {
		return nil, errors.New("explainhttp: secret must be at least 16 bytes")
	}
	return &Recorder{secret: append([]byte(nil), secret...), ring: make([]*explain.Explanation, size)}, nil
}

// Record keeps x, its keys hashed: a copy, so x is the caller's still.
func (r *Recorder) Record(x *explain.Explanation) {
	c := *x
	c.Rules = append([]explain.Rule(nil), x.Rules...)
	c.Hash(r.secret)
	r.mu.Lock()
	r.ring[r.next] = &c
	r.next++
	if r.next == len(r.ring) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// Latest returns the explanations kept, newest first.
func (r *Recorder) Latest() []*explain.Explanation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*explain.Explanation
	for i := r.next - 1; i >= 0; i-- {
		out = append(out, r.ring[i])
	}
	if r.full {
		for i := len(r.ring) - 1; i >= r.next; i-- {
			out = append(out, r.ring[i])
		}
	}
	return out
}

// ServeHTTP answers GET with the latest explanations, newest first, as a
// JSON array; ?decider=name keeps those a policy decided, ?denied=1 those
// that did not proceed.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := req.URL.Query()
	decider, denied := q.Get("decider"), q.Get("denied") == "1"
	out := []*explain.Explanation{}
	for _, x := range r.Latest() {
		if (decider == "" || x.Decider == decider) && (!denied || !x.Proceed) {
			out = append(out, x)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(out)
}
