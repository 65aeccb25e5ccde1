package routes

import "strings"

// Fiber is Fiber's route syntax (v2 and v3: ":name", ":name?" optional,
// "*" and "+" for the rest, "-" and "." between parameters), matched by
// Fiber's own matcher, which the adapter passes:
//
//	routes.Fiber(func(path, pattern string) bool { return fiber.RoutePatternMatch(path, pattern) })
//
// A segment in net/http's syntax ("{id}") is refused.
func Fiber(match func(path, pattern string) bool) *Syntax {
	return &Syntax{name: "Fiber", parse: parseFiber, match: func(template, path string) bool { return match(path, template) }}
}

// parseFiber checks a Fiber template and reads it for its rank alone:
// Fiber matches it.
func parseFiber(template string) (pattern, error) {
	segs, err := segments(template)
	if err != nil {
		return pattern{}, err
	}
	var p pattern
	for _, s := range segs {
		if strings.Contains(s, "{") && strings.Contains(s, "}") {
			return pattern{}, errForeign(s, `":name" for a parameter and "*" or "+" for the rest`)
		}
		if strings.ContainsAny(s, "*+") {
			break // a wildcard: rank 0 from here
		}
		if strings.IndexByte(s, ':') >= 0 {
			p.segs = append(p.segs, segment{{param: true}})
			continue
		}
		p.segs = append(p.segs, segment{{lit: s}})
	}
	return p, nil
}
