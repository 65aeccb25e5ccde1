package fields

import (
	"errors"
	"fmt"
)

// Item is a member of the RateLimit field, "name";r=Remaining;t=Reset, as
// [AppendItem] renders it.
type Item struct {
	Name      string
	Remaining int64 // r: the units left
	Reset     int64 // t: seconds until more quota
}

// Policy is a member of the RateLimit-Policy field, "name";q=Quota;w=Window
// as [AppendPolicy] renders it, or "name";q=Quota;qu="concurrent-requests"
// as [AppendConcurrentPolicy] does.
type Policy struct {
	Name       string
	Quota      int64 // q: the units the policy grants at once
	Window     int64 // w: its window in seconds, 0 when absent
	Concurrent bool  // qu="concurrent-requests": Quota is a number of requests in flight
}

// ParseItems parses the field lines of a RateLimit field strictly, for
// tests and tools that check what a server sends: every member must be a
// String with Integer parameters r >= 0 and t >= 0, or the whole field is
// an error. No lines is no items and no error.
func ParseItems(lines []string) ([]Item, error) {
	var items []Item
	err := parseList(lines, "RateLimit", func(m sfMember, name string) error {
		r, errR := count(m, "r", true)
		t, errT := count(m, "t", true)
		if err := errors.Join(errR, errT); err != nil {
			return err
		}
		items = append(items, Item{Name: name, Remaining: r, Reset: t})
		return nil
	})
	return items, err
}

// ParsePolicies parses the field lines of a RateLimit-Policy field
// strictly, as [ParseItems] does RateLimit: every member must be a String
// with an Integer q >= 0; w, if present, must be an Integer >= 0, and qu a
// String or Token. No lines is no policies and no error.
func ParsePolicies(lines []string) ([]Policy, error) {
	var policies []Policy
	err := parseList(lines, "RateLimit-Policy", func(m sfMember, name string) error {
		q, errQ := count(m, "q", true)
		w, errW := count(m, "w", false)
		if err := errors.Join(errQ, errW); err != nil {
			return err
		}
		p := Policy{Name: name, Quota: q, Window: w}
		if v, ok := m.lookup("qu"); ok {
			if v.kind != sfString && v.kind != sfToken {
				return errors.New("qu is not a String")
			}
			p.Concurrent = v.raw == concurrentRequests
		}
		policies = append(policies, p)
		return nil
	})
	return policies, err
}

// parseList calls member with each member of the List field, and its
// name, until one fails; field names the field in errors. A syntax error
// anywhere fails the whole field (RFC 9651 §4.2) and is the error reported.
func parseList(lines []string, field string, member func(m sfMember, name string) error) error {
	if len(lines) == 0 {
		return nil
	}
	var err error
	it := newSFFieldIter(lines, false)
	for i := 0; ; i++ {
		m, ok := it.next()
		if !ok {
			break
		}
		if err != nil {
			continue // validate the rest
		}
		if m.item.kind != sfString {
			err = fmt.Errorf("fields: %s member %d is not a String naming a policy", field, i)
			continue
		}
		name := unescapeSF(m.item.raw)
		if e := member(m, name); e != nil {
			err = fmt.Errorf("fields: %s member %q: %w", field, name, e)
		}
	}
	if it.bad {
		return fmt.Errorf("fields: %s is not an RFC 9651 List", field)
	}
	return err
}

// count reads the parameter key as a count, a non-negative Integer; absent
// is an error only if required.
func count(m sfMember, key string, required bool) (int64, error) {
	v, ok := m.lookup(key)
	switch {
	case !ok && !required:
		return 0, nil
	case !ok:
		return 0, fmt.Errorf("no %s", key)
	case v.kind != sfInteger || v.num < 0:
		return 0, fmt.Errorf("%s is not an Integer >= 0", key)
	}
	return v.num, nil
}
