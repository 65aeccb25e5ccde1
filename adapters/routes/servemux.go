package routes

import (
	"fmt"
	"go/token"
	"regexp"
	"strings"
)

// ServeMux is net/http's pattern syntax ("/items/{id}", "/files/{path...}",
// "/api/" for the subtree below it, "/{$}" for the root alone), with chi's
// forms besides ("/items/{id:[0-9]+}", "/files/*"), for package sluicehttp
// and sluicechi: a segment in Gin's, Echo's or Fiber's syntax (":id",
// "*path") is refused.
var ServeMux = &Syntax{name: "net/http", parse: parseServeMux}

func parseServeMux(template string) (pattern, error) {
	segs, err := segments(template)
	if err != nil {
		return pattern{}, err
	}
	var p pattern
	names := map[string]bool{}
	for i, s := range segs {
		last := i == len(segs)-1
		switch {
		case last && s == "":
			p.subtree = true // "/api/", and "/" itself: every path below
			return p, nil
		case s == "*" && last:
			p.rest, p.restEmpty = true, true // chi's catch-all
			return p, nil
		case strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*"):
			return pattern{}, errForeign(s, `"{name}" for a parameter and "{name...}" for the rest`)
		case s == "{$}":
			if !last {
				return pattern{}, fmt.Errorf("%q must end the template", s)
			}
			p.segs = append(p.segs, segment{}) // the empty segment after the last slash
			return p, nil
		}
		seg, rest, err := parseBraces(s, names)
		if err != nil {
			return pattern{}, err
		}
		if rest {
			if !last {
				return pattern{}, fmt.Errorf("%q must end the template", s)
			}
			p.rest, p.restEmpty = true, true
			return p, nil
		}
		p.segs = append(p.segs, seg)
	}
	return p, nil
}

// parseBraces reads a segment with "{name}" parameters: a whole segment's
// "{name...}" (rest), or parameters among literals as chi writes them, a
// chi parameter with a regular expression ("{id:[0-9]+}").
func parseBraces(s string, names map[string]bool) (segment, bool, error) {
	var seg segment
	for s != "" {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			if strings.IndexByte(s, '}') >= 0 {
				return nil, false, fmt.Errorf("segment holds '}' without '{'")
			}
			seg = append(seg, part{lit: s})
			break
		}
		if open > 0 {
			seg = append(seg, part{lit: s[:open]})
		}
		end := closing(s, open)
		if end < 0 {
			return nil, false, fmt.Errorf("segment holds '{' without '}'")
		}
		inner := s[open+1 : end]
		s = s[end+1:]
		if strings.HasSuffix(inner, "...") {
			if len(seg) > 0 || s != "" {
				return nil, false, fmt.Errorf("{%s} must be a whole segment", inner)
			}
			if err := checkName(strings.TrimSuffix(inner, "..."), names); err != nil {
				return nil, false, err
			}
			return nil, true, nil
		}
		name, expr, hasExpr := strings.Cut(inner, ":")
		if err := checkName(name, names); err != nil {
			return nil, false, err
		}
		pt := part{param: true}
		if hasExpr {
			re, err := regexp.Compile("^(?:" + expr + ")$")
			if err != nil {
				return nil, false, fmt.Errorf("parameter %q: %w", name, err)
			}
			pt.re = re
		}
		if len(seg) > 0 && seg[len(seg)-1].param {
			return nil, false, fmt.Errorf("two parameters with no literal between them")
		}
		seg = append(seg, pt)
	}
	return seg, false, nil
}

// closing returns the index of the '}' closing the '{' at open, counting
// the braces of a regular expression's repetitions, or -1.
func closing(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// checkName refuses a parameter name that is not a Go identifier, or one
// the template already has.
func checkName(name string, names map[string]bool) error {
	if !token.IsIdentifier(name) {
		return fmt.Errorf("parameter name %q is not an identifier", name)
	}
	if names[name] {
		return fmt.Errorf("parameter %q appears twice", name)
	}
	names[name] = true
	return nil
}
