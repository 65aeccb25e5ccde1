package sluicehttp

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// Chi has the middleware ask r, the chi router it is installed on with
// r.Use, which route each request will match, before chi has routed it:
// rules with Routes and a Route key then see chi's patterns ("/items/{id}",
// a mounted sub-router's "/api/login") in r.Use as they do in r.With.
//
//	r := chi.NewRouter()
//	mw, err := sluicehttp.New(cfg, sluicehttp.Chi(r))
//	r.Use(mw)
//
// r must be the router whose Use the middleware is in, the top one: inside
// a sub-router (Route, Mount), whose Use sees only the rest of the path,
// install per-route limits on its routes with r.With(mw) instead.
func Chi(r chi.Routes) Option {
	return FindRoute(func(req *http.Request) string {
		path := req.URL.RawPath // what chi routes by, if the URL has one
		if path == "" {
			path = req.URL.Path
		}
		return r.Find(chi.NewRouteContext(), req.Method, path)
	})
}
