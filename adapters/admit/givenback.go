package admit

import (
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
)

// reported is what a Settlement needs to set the rate-limit fields again
// once the response's status is known: the decision reported, when its
// policy is a rule's with Charge, whose units may yet be given back.
type reported struct {
	d    core.Decision
	rule int      // the rule of d's policy, in Config.Rules
	cost int64    // the units it reserved
	old  fieldSet // the fields as set, their text in text
	text string
	done bool // SetFields has run
	// status and kept are the status SetFields saw and what the rule's
	// Charge said of it, so that Settle asks Charge once per rule.
	status int
	kept   bool
}

// charge returns what rule i's Charge says of status, asked once.
func (s *Settlement) charge(i, status int) bool {
	if rp := &s.reported; rp.done && rp.rule == i && rp.status == status {
		return rp.kept
	}
	return s.e.rules[i].Charge(status)
}

// report records, in s, the fields decide set for r with d, if d's policy
// belongs to a rule with Charge: only then can the give-back change them.
func (s *Settlement) report(r *Request, d *core.Decision) {
	if d.Limit == 0 || s.e.style == noHeaders {
		return
	}
	layer := 0
	for i := range s.e.rules {
		if r.mask&(1<<i) == 0 {
			continue
		}
		if q := r.reqs[layer]; q.Policy == d.Policy {
			if s.e.rules[i].Charge == nil {
				return
			}
			rp := &s.reported
			rp.d, rp.rule, rp.cost = *d, i, q.Cost
			rp.old = fieldSet{text: r.buf[:0]} // free: setFields's values are copied
			s.e.render(&rp.old, d, seconds(d.ResetAfter))
			rp.text = string(rp.old.text)
			if cap(rp.old.text) > cap(r.buf) {
				r.buf = rp.old.text[:0] // keep the grown buffer
			}
			rp.old.text = nil
			return
		}
		layer++
	}
}

// SetFields sets the rate-limit fields, through w, as they stand once the
// response is answered with status: a rule with Charge that gives its units
// back for status (a successful login, under a Charge of status >= 400) reports them as
// never taken, rather than the standing with them reserved that Decide
// set. An adapter whose framework lets it run code after the handler has
// chosen the status and before the header is sent calls it then, before
// Settle (see "Writing an adapter"); one that cannot leaves the fields as
// Decide set them. It changes only the field values this middleware set,
// and does nothing when the units are kept, or none were charged; only
// its first call counts, so an adapter may call it both where the header
// is written and, for a response whose handler wrote none, once the
// handler has returned.
func (s *Settlement) SetFields(status int, w Writer) {
	rp := &s.reported
	if rp.d.Policy == nil || rp.done {
		return
	}
	rp.done = true
	if status == 0 {
		status = statusInternalError
	}
	rp.status, rp.kept = status, s.e.rules[rp.rule].Charge(status)
	if rp.kept {
		return // the fields set stand
	}
	d := rp.d
	d.Remaining = min(d.Limit, d.Remaining+rp.cost)
	// A unit of the bucket family (the only one Charge takes) refills in
	// Window/Burst: the time to full shrinks by that much per unit back.
	per := d.Policy.Window() / time.Duration(d.Policy.Burst())
	d.ResetAfter = max(0, d.ResetAfter-time.Duration(rp.cost)*per)
	var f fieldSet
	s.e.render(&f, &d, seconds(d.ResetAfter))
	start, fstart := 0, 0
	for i := range f.n {
		old, now := rp.text[start:rp.old.ends[i]], string(f.text[fstart:f.ends[i]])
		start, fstart = rp.old.ends[i], f.ends[i]
		cur := w.ResponseHeader(f.names[i])
		switch {
		case s.e.style == ietfHeaders && strings.Contains(cur, old): // a list: replace this middleware's member
			w.SetHeader(f.names[i], strings.Replace(cur, old, now, 1))
		case cur == old:
			w.SetHeader(f.names[i], now)
		}
	}
}
