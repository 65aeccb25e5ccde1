// Package routes matches route templates against request paths in each
// framework's syntax, for the engine (package admit) to decide a rule with
// Routes, or a Route key, where the framework has not routed the request
// yet (admit.RouteUnknown): chi's r.Use, Echo's Pre, Fiber's app.Use,
// net/http around another router. Each adapter sets admit.Config.Router to
// its framework's:
//
//	cfg.Router = routes.ServeMux // net/http and chi: "/items/{id}", "/files/{path...}", "/api/"
//	cfg.Router = routes.Gin      // "/items/:id", "/files/*path"
//	cfg.Router = routes.Echo     // "/items/:id", "/files/*"
//	cfg.Router = routes.Fiber(fiber.RoutePatternMatch)
//
// A template another framework's syntax writes ("/u/:id" for a ServeMux) is
// an error at New rather than a rule that never matches.
package routes

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
)

// Syntax is a framework's route syntax: it checks templates and matches
// paths against them. It implements admit.Router.
type Syntax struct {
	name  string
	parse func(template string) (pattern, error)
	match func(template, path string) bool // a framework's own matcher, if set (Fiber)
	// slash: a path with a trailing slash also matches the template without
	// it, as the framework redirects it (Gin) or a middleware before
	// routing strips it (Echo's RemoveTrailingSlash): a rule applies to
	// a request that may reach its route.
	slash bool

	parsed  sync.Map // template -> parsed, for the few templates a program has
	nParsed atomic.Int64
}

// parsed is a template as parse read it.
type parsed struct {
	p   pattern
	err error
}

// maxParsed bounds the templates a Syntax keeps parsed.
const maxParsed = 1024

// read returns template parsed, from the cache if it is there.
func (s *Syntax) read(template string) (pattern, error) {
	if v, ok := s.parsed.Load(template); ok {
		r := v.(*parsed)
		return r.p, r.err
	}
	p, err := s.parse(template)
	if s.nParsed.Load() < maxParsed {
		if _, loaded := s.parsed.LoadOrStore(template, &parsed{p, err}); !loaded {
			s.nParsed.Add(1)
		}
	}
	return p, err
}

// Check returns an error if template cannot match a path as the framework
// routes it: another framework's syntax, or one the framework refuses.
func (s *Syntax) Check(template string) error {
	_, err := s.read(template)
	return err
}

// Match reports whether path matches template, and how specifically: when
// several templates match, the framework routes the path to the one of the
// highest rank (a literal segment before a parameter, a parameter before a
// wildcard, compared from the left). A template Check refuses matches
// nothing.
func (s *Syntax) Match(template, path string) (rank int64, ok bool) {
	p, err := s.read(template)
	if err != nil {
		return 0, false
	}
	if s.match != nil {
		if !s.match(template, path) {
			return 0, false
		}
		return p.rank(), true
	}
	if !p.match(path) && !(s.slash && len(path) > 1 && path[len(path)-1] == '/' && p.match(path[:len(path)-1])) {
		return 0, false
	}
	return p.rank(), true
}

func (s *Syntax) String() string { return s.name }

// part is a piece of a segment: a literal, or a parameter (with a regular
// expression, chi's "{id:[0-9]+}"), which takes the rest of the segment or
// up to the next literal.
type part struct {
	lit   string
	param bool
	re    *regexp.Regexp
}

// segment is the parts of one path segment.
type segment []part

// pattern is a parsed template: its segments, and how it ends.
type pattern struct {
	segs []segment
	// rest: the last segment is a wildcard taking the rest of the path,
	// slashes included; restEmpty: it may take nothing at all.
	rest, restEmpty bool
	restPrefix      string // what the rest starts with (Echo's "/files/a*")
	// subtree: ServeMux's trailing slash, every path below.
	subtree bool
	// paramEmpty: a parameter may match an empty value (Echo);
	// midEmpty: only in a segment a slash follows (Gin).
	paramEmpty, midEmpty bool
	// greedy: a parameter ending the template takes the rest of the path,
	// slashes included (Echo's, where no deeper route matches).
	greedy bool
}

// rank scores p: a base-4 digit per segment, from the left (literal 3,
// constrained parameter 2, parameter 1, wildcard 0), over 30 digits.
func (p pattern) rank() int64 {
	var r int64
	for i := range 30 {
		d := int64(0)
		if i < len(p.segs) {
			d = 3
			for _, pt := range p.segs[i] {
				switch {
				case pt.param && pt.re == nil:
					d = min(d, 1)
				case pt.param:
					d = min(d, 2)
				}
			}
		}
		r = r*4 + d
	}
	return r
}

// match reports whether path matches p.
func (p pattern) match(path string) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	rest := path[1:]
	for i, seg := range p.segs {
		last := i == len(p.segs)-1
		var s string
		cut := strings.IndexByte(rest, '/')
		if last && p.greedy && len(seg) > 0 && seg[len(seg)-1].param && !p.rest && !p.subtree {
			cut = -1 // the parameter takes the rest
		}
		switch {
		case cut < 0 && last:
			s, rest = rest, ""
			if !matchSegment(seg, s, p.paramEmpty) {
				return false
			}
			return !p.subtree && !p.rest
		case cut < 0:
			return false
		default:
			s, rest = rest[:cut], rest[cut+1:]
		}
		if !matchSegment(seg, s, p.paramEmpty || p.midEmpty) {
			return false
		}
	}
	switch {
	case p.rest:
		return strings.HasPrefix(rest, p.restPrefix) && (p.restEmpty || rest != "")
	case p.subtree:
		return true
	}
	return false
}

// matchSegment reports whether s matches seg: each parameter takes up to
// the next literal's first occurrence, or the rest of the segment.
func matchSegment(seg segment, s string, emptyParam bool) bool {
	for i, pt := range seg {
		if !pt.param {
			if !strings.HasPrefix(s, pt.lit) {
				return false
			}
			s = s[len(pt.lit):]
			continue
		}
		end := len(s)
		if i+1 < len(seg) {
			if end = strings.Index(s, seg[i+1].lit); end < 0 {
				return false
			}
		}
		v := s[:end]
		if v == "" && (!emptyParam || i > 0) || pt.re != nil && !pt.re.MatchString(v) {
			return false
		}
		s = s[end:]
	}
	return s == ""
}

// errForeign is the error of a template in another framework's syntax.
func errForeign(seg, want string) error {
	return fmt.Errorf("segment %q is another router's syntax: this router writes %s", seg, want)
}

// segments splits a template's path after its leading slash.
func segments(template string) ([]string, error) {
	if !strings.HasPrefix(template, "/") {
		return nil, errors.New("a template starts with '/'")
	}
	return strings.Split(template[1:], "/"), nil
}
