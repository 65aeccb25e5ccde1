package admit

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// ErrRouteUnknown is the error, handed to Config.OnError (500 by default),
// of a request whose route the adapter cannot know, when a rule with Routes
// might apply to it or a Route key asks for it: the middleware is installed
// where the route is not known yet, so such rules would never match. See the
// adapter's documentation for where to install it.
var ErrRouteUnknown = errors.New("admit: the route is not known where the middleware runs")

// misplacedFix is the log message of a middleware installed where the
// route is not known, with the fix for each framework where it happens.
const misplacedFix = "sluice: a rule with Routes, or a Route key, cannot see the route where this middleware is installed, " +
	"so requests it might apply to are answered through Config.OnError (500 by default). " +
	"Install it where the framework has routed the request: " +
	"chi's r.Use: sluicechi.New(cfg, r), or r.With(mw) on the route; " +
	"a ServeMux: mw(mux) around the mux itself, or on the route's pattern; " +
	"Fiber: on the routes, app.Post(\"/login\", mw, h), not app.Use; " +
	"Echo: e.Use, not e.Pre; " +
	"or keep rules without Routes in this middleware and put those with Routes in one on the routes"

// logMisplaced logs misplacedFix, for the first request that met err.
func (e *Engine) logMisplaced(r *Request, err error) {
	e.logger.LogAttrs(r.Context(), slog.LevelError, misplacedFix,
		slog.String("method", r.Method()), slog.String("path", r.Path()), slog.String("error", err.Error()))
}

// route is a Rule.Routes entry: the request method ("" for any) and the
// route's path template, as the adapter's framework writes it.
type route struct{ method, path string }

// parseRoute reads a Rule.Routes entry, "METHOD /template" or "/template".
// The method is a token without lower-case letters: methods are
// case-sensitive, and "post" would match no request anyone sends. The
// template holds no query string or fragment, which no route has.
func parseRoute(s string) (route, error) {
	method, path, hasMethod := strings.Cut(s, " ")
	if !hasMethod {
		method, path = "", s
	}
	switch {
	case s != strings.TrimSpace(s):
		return route{}, errors.New("leading or trailing space")
	case hasMethod && (method == "" || tokenLen(method) != len(method)):
		return route{}, fmt.Errorf("method %q is not a token", method)
	case strings.ToUpper(method) != method:
		return route{}, fmt.Errorf("method %q is not upper-case (methods are case-sensitive)", method)
	case !strings.HasPrefix(path, "/"):
		return route{}, errors.New(`want "METHOD /template" or "/template" (one space, no host)`)
	case strings.ContainsFunc(path, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return route{}, errors.New("the template holds a space or a control character")
	case strings.IndexByte(path, '#') >= 0:
		return route{}, errors.New("the template holds '#': a route has no fragment, which clients never send")
	case hasQuery(path):
		return route{}, errors.New("the template holds '?' outside a parameter: a route has no query string")
	}
	return route{method, path}, nil
}

// hasQuery reports whether a template holds a '?' that is not Fiber's
// optional-parameter marker (":id?"): one in a segment with no parameter
// before it, as in "/login?next=x", which would never match.
func hasQuery(path string) bool {
	for i := 0; i < len(path); i++ {
		if path[i] != '?' {
			continue
		}
		segment := path[strings.LastIndexByte(path[:i], '/')+1 : i]
		if strings.IndexByte(segment, ':') < 0 {
			return true
		}
	}
	return false
}

// parseRoutes reads a rule's Routes into the set matches looks requests up in.
func parseRoutes(entries []string) (map[route]struct{}, error) {
	set := make(map[route]struct{}, len(entries))
	for _, s := range entries {
		rt, err := parseRoute(s)
		if err != nil {
			return nil, fmt.Errorf("route %q: %w", s, err)
		}
		if _, dup := set[rt]; dup {
			return nil, fmt.Errorf("route %q is listed twice", s)
		}
		set[rt] = struct{}{}
	}
	return set, nil
}

// matches reports whether r's route is in routes: its path template, with
// any method or r's. A HEAD request counts as a GET, since the GET route's
// handler serves it (net/http's and Fiber's GET routes match HEAD), so a
// limit on GET cannot be bypassed with HEAD.
func matches(routes map[route]struct{}, r *Request) (bool, error) {
	path, known := r.routePath()
	switch {
	case !known:
		return false, ErrRouteUnknown
	case path == "":
		return false, nil
	}
	method := r.Method()
	_, anyMethod := routes[route{"", path}]
	_, byMethod := routes[route{method, path}]
	if method == "HEAD" && !byMethod {
		_, byMethod = routes[route{"GET", path}]
	}
	return anyMethod || byMethod, nil
}

// routePath returns the path template of r's route, "" if it matched none;
// ok is false if the adapter cannot know it. It is found once per request.
func (r *Request) routePath() (path string, ok bool) {
	if !r.routed {
		rt := r.Route()
		r.routed, r.routeKnown = true, rt != RouteUnknown
		if r.routeKnown {
			r.route = pathOf(rt)
		}
	}
	return r.route, r.routeKnown
}

// pathOf returns the path template of a route as an adapter gives it: Gin's,
// Echo's and Fiber's are one ("/items/:id"), while a net/http ServeMux
// pattern may start with a method and a host ("GET example.com/items/{id}"),
// which Routes entries leave out.
func pathOf(rt string) string {
	if rt == "" || rt[0] == '/' {
		return rt
	}
	if i := strings.IndexAny(rt, " \t"); i >= 0 {
		rt = strings.TrimLeft(rt[i+1:], " \t")
	}
	if i := strings.IndexByte(rt, '/'); i >= 0 {
		return rt[i:]
	}
	return ""
}
