package fields

import (
	"strings"
)

// This file is a validating parser for RFC 9651 structured fields, the syntax
// of the RateLimit and RateLimit-Policy fields. It covers the whole grammar
// (all bare item types, parameters, inner lists, Lists and Dictionaries) so
// that a valid field is never rejected for using a type we do not care
// about, but it extracts only what the rate-limit fields need: names and
// integer parameters. It never allocates: items refer to substrings of the
// input.
//
// As RFC 9651 §4.2 requires, any syntax error fails the whole field; callers
// validate a field completely before using any of its members.

// sfKind is the type of a bare item.
type sfKind uint8

const (
	sfInvalid sfKind = iota
	sfInteger
	sfDecimal
	sfString
	sfToken
	sfBytes
	sfBoolean
	sfDate
	sfDisplay
	sfInnerList
)

// sfBare is a parsed bare item. raw is the token, or the string content
// between the quotes with escapes left in place; num is an Integer's or
// Date's value, or a Boolean's 0/1.
type sfBare struct {
	kind sfKind
	raw  string
	num  int64
}

// sfMember is a List member or a Dictionary value: a bare item (or an inner
// list, kind sfInnerList) and its raw, already validated parameters.
type sfMember struct {
	key    string // Dictionary key; empty for List members
	item   sfBare
	params string
}

// params2 looks up two Integer parameters in one scan. Later duplicates
// win, as RFC 9651 says; ok is false when a key is absent or not an Integer.
func (m sfMember) params2(k1, k2 string) (v1, v2 int64, ok1, ok2 bool) {
	p := m.params
	for len(p) > 0 && p[0] == ';' {
		k, v, rest, good := parseParam(p[1:])
		if !good {
			return 0, 0, false, false // unreachable for validated input
		}
		switch k {
		case k1:
			v1, ok1 = v.num, v.kind == sfInteger
		case k2:
			v2, ok2 = v.num, v.kind == sfInteger
		}
		p = rest
	}
	return v1, v2, ok1, ok2
}

// text looks up a String or Token parameter by key, raw (a String's
// escapes left in). Later duplicates win.
func (m sfMember) text(key string) (raw string, ok bool) {
	p := m.params
	for len(p) > 0 && p[0] == ';' {
		k, v, rest, good := parseParam(p[1:])
		if !good {
			return "", false // unreachable for validated input
		}
		if k == key {
			raw, ok = v.raw, v.kind == sfString || v.kind == sfToken
		}
		p = rest
	}
	return raw, ok
}

// lookup returns the value of the parameter key, the last if it repeats.
func (m sfMember) lookup(key string) (v sfBare, ok bool) {
	p := m.params
	for len(p) > 0 && p[0] == ';' {
		k, val, rest, good := parseParam(p[1:])
		if !good {
			return sfBare{}, false // unreachable for validated input
		}
		if k == key {
			v, ok = val, true
		}
		p = rest
	}
	return v, ok
}

// param looks up an Integer parameter by key. Later duplicates win, as RFC
// 9651 says. ok is false when the key is absent or not an Integer.
func (m sfMember) param(key string) (n int64, ok bool) {
	n, _, ok, _ = m.params2(key, "") // no key is empty
	return n, ok
}

// sfIter walks the members of a List or Dictionary field value.
type sfIter struct {
	s    string
	dict bool
	bad  bool
	more bool // a ',' was consumed, so another member must follow
}

func newSFIter(s string, dict bool) sfIter {
	// Leading SP is discarded (RFC 9651 §4.2 step 2), HTAB is not: "\ta"
	// is invalid. Trailing OWS goes with the last member (§4.2.1).
	return sfIter{s: trimLeftSP(s), dict: dict}
}

// newSFFieldIter walks a field sent as one or more field lines. RFC 9651
// §4.2 parses them as one value, joined by commas (RFC 9110 §5.3), so a
// member may span lines and an empty line is an empty member, an error.
// Only a field of several lines allocates.
func newSFFieldIter(lines []string, dict bool) sfIter {
	if len(lines) == 1 {
		return newSFIter(lines[0], dict)
	}
	return newSFIter(strings.Join(lines, ", "), dict)
}

// next returns the next member; ok is false at the end or on a syntax error
// (then it.bad is set).
func (it *sfIter) next() (m sfMember, ok bool) {
	if it.bad {
		return m, false
	}
	if it.s == "" {
		if it.more { // trailing comma
			it.bad = true
		}
		return m, false
	}
	s := it.s
	if it.dict {
		key, rest, good := parseKey(s)
		if !good {
			it.bad = true
			return m, false
		}
		m.key, s = key, rest
		if len(s) > 0 && s[0] == '=' {
			s = s[1:]
			m, s, ok = parseItemOrInner(s, m)
		} else {
			// A key without a value is Boolean true, with parameters.
			m.item = sfBare{kind: sfBoolean, num: 1}
			m.params, s, ok = parseParams(s)
		}
	} else {
		m, s, ok = parseItemOrInner(s, m)
	}
	if !ok {
		it.bad = true
		return m, false
	}
	s = trimLeftOWS(s)
	it.more = false
	if s != "" {
		if s[0] != ',' {
			it.bad = true
			return m, false
		}
		s = trimLeftOWS(s[1:])
		it.more = true
	}
	it.s = s
	return m, true
}

// sfValid reports whether the whole field value parses.
func sfValid(s string, dict bool) bool {
	it := newSFIter(s, dict)
	for {
		if _, ok := it.next(); !ok {
			return !it.bad
		}
	}
}

func parseItemOrInner(s string, m sfMember) (sfMember, string, bool) {
	var ok bool
	if len(s) > 0 && s[0] == '(' {
		m.item.kind = sfInnerList
		s, ok = skipInnerList(s[1:])
	} else {
		m.item, s, ok = parseBare(s)
	}
	if !ok {
		return m, s, false
	}
	m.params, s, ok = parseParams(s)
	return m, s, ok
}

// skipInnerList validates an inner list after its '(' up to and including
// its ')'. Its items are not needed by any field we read.
func skipInnerList(s string) (string, bool) {
	for {
		s = trimLeftSP(s)
		if s == "" {
			return s, false
		}
		if s[0] == ')' {
			return s[1:], true
		}
		var ok bool
		if _, s, ok = parseBare(s); !ok {
			return s, false
		}
		if _, s, ok = parseParams(s); !ok {
			return s, false
		}
		if s == "" || (s[0] != ' ' && s[0] != ')') {
			return s, false
		}
	}
}

// parseParams validates parameters and returns their raw text.
func parseParams(s string) (params, rest string, ok bool) {
	start := s
	for len(s) > 0 && s[0] == ';' {
		if _, _, s, ok = parseParam(s[1:]); !ok {
			return "", s, false
		}
	}
	return start[:len(start)-len(s)], s, true
}

// parseParam parses one parameter after its ';'.
func parseParam(s string) (key string, val sfBare, rest string, ok bool) {
	s = trimLeftSP(s)
	if key, s, ok = parseKey(s); !ok {
		return "", val, s, false
	}
	if len(s) > 0 && s[0] == '=' {
		val, s, ok = parseBare(s[1:])
		return key, val, s, ok
	}
	return key, sfBare{kind: sfBoolean, num: 1}, s, true
}

// parseKey: ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" ).
func parseKey(s string) (key, rest string, ok bool) {
	if s == "" || !(isLCAlpha(s[0]) || s[0] == '*') {
		return "", s, false
	}
	i := 1
	for i < len(s) && (isLCAlpha(s[i]) || isDigit(s[i]) || s[i] == '_' || s[i] == '-' || s[i] == '.' || s[i] == '*') {
		i++
	}
	return s[:i], s[i:], true
}

func isAlpha(c byte) bool    { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isLCAlpha(c byte) bool  { return 'a' <= c && c <= 'z' }
func isLowerHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' }

func unhex(c byte) byte {
	if isDigit(c) {
		return c - '0'
	}
	return c - 'a' + 10
}

// isTChar reports an RFC 9110 token character.
func isTChar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

func trimLeftSP(s string) string {
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	return s
}

func trimLeftOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	return s
}
