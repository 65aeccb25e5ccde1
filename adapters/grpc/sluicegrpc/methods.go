package sluicegrpc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluice-go/sluice/adapters/admit"
)

// methods is a set of method patterns, a Rule.Routes of gRPC's: full methods
// ("/pkg.Service/Method") and whole services ("/pkg.Service/*").
type methods struct {
	exact    map[string]struct{} // "/pkg.Service/Method"
	services map[string]struct{} // "/pkg.Service/", for "/pkg.Service/*"
}

// parseMethods reads method patterns, refusing anything else with an error
// that names the entry.
func parseMethods(entries []string) (*methods, error) {
	m := &methods{exact: map[string]struct{}{}, services: map[string]struct{}{}}
	for _, s := range entries {
		service, method, err := parseMethod(s)
		if err != nil {
			return nil, fmt.Errorf("method %q: %w", s, err)
		}
		set, k := m.exact, s
		if method == "*" {
			set, k = m.services, "/"+service+"/"
		}
		if _, dup := set[k]; dup {
			return nil, fmt.Errorf("method %q is listed twice", s)
		}
		set[k] = struct{}{}
	}
	return m, nil
}

// parseMethod splits "/pkg.Service/Method" or "/pkg.Service/*".
func parseMethod(s string) (service, method string, err error) {
	rest, ok := strings.CutPrefix(s, "/")
	if !ok {
		return "", "", errors.New(`want "/pkg.Service/Method" or "/pkg.Service/*"`)
	}
	service, method, ok = strings.Cut(rest, "/")
	switch {
	case !ok || service == "" || method == "":
		return "", "", errors.New(`want "/pkg.Service/Method" or "/pkg.Service/*"`)
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f }):
		return "", "", errors.New("a space, a control or a non-ASCII character")
	case strings.ContainsAny(service, "*") || strings.ContainsAny(method, "/") || (method != "*" && strings.Contains(method, "*")):
		return "", "", errors.New(`"*" stands only for a whole method ("/pkg.Service/*")`)
	}
	return service, method, nil
}

// match reports whether full, a call's full method, is in m. It allocates
// nothing.
func (m *methods) match(full string) bool {
	if _, ok := m.exact[full]; ok {
		return true
	}
	if len(m.services) == 0 {
		return false
	}
	i := strings.LastIndexByte(full, '/')
	if i <= 0 {
		return false
	}
	_, ok := m.services[full[:i+1]]
	return ok
}

// routed returns cfg with the Routes of its rules read as method patterns:
// admit matches a route's template exactly, and "/pkg.Service/*" is no
// template, so a rule's Routes become a Skip of the calls outside them.
// Dependencies' Routes name full methods, which admit matches as they are.
func routed(cfg admit.Config, what string) (admit.Config, error) {
	rules := make([]admit.Rule, len(cfg.Rules))
	for i, r := range cfg.Rules {
		if len(r.Routes) > 0 {
			m, err := parseMethods(r.Routes)
			if err != nil {
				return cfg, fmt.Errorf("sluicegrpc: %s.Rules[%d].Routes: %w", what, i, err)
			}
			r.Routes = nil
			skip := r.Skip
			r.Skip = func(req *admit.Request) bool {
				return !m.match(req.Route()) || (skip != nil && skip(req))
			}
		}
		rules[i] = r
	}
	cfg.Rules = rules
	for i, d := range cfg.Dependencies {
		for _, s := range d.Routes {
			_, method, err := parseMethod(s)
			if err == nil && method == "*" {
				err = errors.New(`a dependency's Routes list full methods; "*" is for Rule.Routes`)
			}
			if err != nil {
				return cfg, fmt.Errorf("sluicegrpc: %s.Dependencies[%d].Routes: method %q: %w", what, i, s, err)
			}
		}
	}
	return cfg, nil
}
