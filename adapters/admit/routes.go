package admit

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// Router is a framework's route syntax (package routes has each
// framework's, and each adapter sets its own as Config.Router): New checks
// the Rule.Routes templates with it, and the engine matches them against a
// request the framework has not routed yet (RouteUnknown), so that a rule
// applies exactly as it would after routing.
type Router interface {
	// Check returns an error if template (a Routes entry's path) cannot
	// match on the router: another router's syntax, or one it refuses.
	Check(template string) error
	// Match reports whether path, a request's URL path, matches template,
	// and with what rank: of several templates matching a path, the
	// router routes it to the one of the highest rank.
	Match(template, path string) (rank int64, ok bool)
}

// ErrRouteUnknown is the error, handed to Config.OnError (500 by default),
// of a request whose route an adapter with no Config.Router cannot know,
// when a rule with Routes might apply to it or a Route key asks for it:
// such rules would never match. The adapters sluice ships set a Router.
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

// logUnrouted says, for the first request a Route key could not find the
// route of, that such requests share one limit, and how to key them by
// their routes.
func (e *Engine) logUnrouted(r *Request) {
	e.logger.LogAttrs(r.Context(), slog.LevelWarn, "sluice: a Route key cannot see the route where this middleware is installed, "+
		"and the request matches no template of the rules' Routes: such requests share the one key \""+RouteUnknown+"\". "+
		"List the routes in a rule's Routes, or install the middleware where the framework has routed the request "+
		"(chi: sluicechi.New(cfg, r); Fiber: on the routes, not app.Use; Echo: e.Use, not e.Pre)",
		slog.String("method", r.Method()), slog.String("path", r.Path()))
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
// ok is false if the adapter cannot know it. Where the framework has not
// routed r, it is the Rule.Routes template the Config's Router matches r
// to, if it has a Router (see resolve). It is found once per request.
func (r *Request) routePath() (path string, ok bool) {
	if !r.routed {
		rt := r.Route()
		r.routed, r.routeKnown = true, rt != RouteUnknown
		switch {
		case r.routeKnown:
			r.route = pathOf(rt)
		case r.e.router != nil:
			r.route, r.routeKnown, r.selfRouted = r.e.resolve(r), true, true
		}
	}
	return r.route, r.routeKnown
}

// template is a path template some rule's Routes lists, with the methods
// listed with it.
type template struct {
	path      string
	anyMethod bool
	methods   []string
}

// addTemplates records the templates of a rule's Routes, in order, for
// resolve.
func (e *Engine) addTemplates(entries []string) {
	for _, s := range entries {
		rt, _ := parseRoute(s) // checked by newRule
		i := slices.IndexFunc(e.templates, func(t template) bool { return t.path == rt.path })
		if i < 0 {
			e.templates = append(e.templates, template{path: rt.path})
			i = len(e.templates) - 1
		}
		if t := &e.templates[i]; rt.method == "" {
			t.anyMethod = true
		} else if !slices.Contains(t.methods, rt.method) {
			t.methods = append(t.methods, rt.method)
		}
	}
}

// resolve returns the template of the rules' Routes the Router routes r
// to, as the framework would (the most specific that matches r's path,
// listed with r's method or none; HEAD as GET), "" if none does: a route
// no rule lists, which no rule with Routes applies to.
func (e *Engine) resolve(r *Request) string {
	method, path := r.Method(), r.Path()
	best, bestRank := "", int64(-1)
	for i := range e.templates {
		t := &e.templates[i]
		if !t.anyMethod && !slices.Contains(t.methods, method) && !(method == "HEAD" && slices.Contains(t.methods, "GET")) {
			continue
		}
		if rank, ok := e.router.Match(t.path, path); ok && rank > bestRank {
			best, bestRank = t.path, rank
		}
	}
	return best
}

// checkRoutes checks every Routes template of rules with router, at New.
func checkRoutes(router Router, rules []Rule) error {
	for i, ru := range rules {
		for _, s := range ru.Routes {
			rt, err := parseRoute(s)
			if err != nil {
				continue // newRule says so
			}
			if err := router.Check(rt.path); err != nil {
				return fmt.Errorf("admit: rule %d: route %q cannot match on %v: %w", i, s, router, err)
			}
		}
	}
	return nil
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
