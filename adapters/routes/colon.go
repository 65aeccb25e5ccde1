package routes

import (
	"fmt"
	"strings"
)

// Gin is Gin's route syntax: ":name" takes the rest of a segment (after a
// literal prefix, if any), "*name" the rest of the path after a slash, as
// the last segment. A segment in net/http's syntax ("{id}") is refused.
//
// A path with a trailing slash matches the template without one, which Gin
// redirects it to.
var Gin = &Syntax{name: "Gin", parse: func(t string) (pattern, error) { return parseColon(t, false) }, slash: true}

// Echo is Echo's route syntax (v4 and v5): ":name" takes the rest of a
// segment (and, ending the template, the rest of the path, as Echo's
// router does where no deeper route matches), "*" the rest of the path, as
// the last part of the template. A segment in net/http's syntax ("{id}") is refused.
//
// A path with a trailing slash matches the template without one, which
// Echo's RemoveTrailingSlash, under Pre, moves it to.
var Echo = &Syntax{name: "Echo", parse: func(t string) (pattern, error) { return parseColon(t, true) }, slash: true}

// parseColon reads a Gin or Echo template.
func parseColon(template string, echo bool) (pattern, error) {
	segs, err := segments(template)
	if err != nil {
		return pattern{}, err
	}
	p := pattern{midEmpty: true, greedy: echo}
	for i, s := range segs {
		last := i == len(segs)-1
		if strings.Contains(s, "{") && strings.Contains(s, "}") {
			return pattern{}, errForeign(s, `":name" for a parameter and "*" for the rest`)
		}
		if star := strings.IndexByte(s, '*'); star >= 0 {
			switch {
			case !last:
				return pattern{}, fmt.Errorf("the wildcard in %q must end the template", s)
			case !echo && star != 0:
				return pattern{}, fmt.Errorf("the wildcard in %q must follow a '/'", s)
			case !echo && len(s) == 1:
				return pattern{}, fmt.Errorf("the wildcard %q needs a name", s)
			}
			if strings.ContainsAny(s[:star], ":") {
				return pattern{}, fmt.Errorf("segment %q holds a parameter and a wildcard", s)
			}
			p.restPrefix = s[:star] // Echo's "/files/a*": a literal, then anything
			p.rest, p.restEmpty = true, true
			return p, nil
		}
		seg, err := colonSegment(s)
		if err != nil {
			return pattern{}, err
		}
		p.segs = append(p.segs, seg)
	}
	return p, nil
}

// colonSegment reads a segment: a literal, then at most one ":name" that
// takes the rest of it.
func colonSegment(s string) (segment, error) {
	colon := strings.IndexByte(s, ':')
	if colon < 0 {
		return segment{{lit: s}}, nil
	}
	if strings.IndexByte(s[colon+1:], ':') >= 0 {
		return nil, fmt.Errorf("segment %q holds two parameters", s)
	}
	if colon+1 == len(s) {
		return nil, fmt.Errorf("parameter in %q has no name", s)
	}
	var seg segment
	if colon > 0 {
		seg = append(seg, part{lit: s[:colon]})
	}
	return append(seg, part{param: true}), nil
}
