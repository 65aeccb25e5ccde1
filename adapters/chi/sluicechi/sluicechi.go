// Package sluicechi is sluice's middleware for chi routers: sluicehttp's,
// told which route each request will match before chi has routed it, so
// that rules with Routes and a Route key see chi's patterns in r.Use.
//
//	r := chi.NewRouter()
//	mw, err := sluicechi.New(cfg, r)
//	if err != nil {
//		log.Fatal(err)
//	}
//	r.Use(mw)
//
// Per route, r.With(sluicehttp.New(cfg)) needs no router: chi has set the
// request's pattern by then.
package sluicechi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
)

// New returns middleware that limits requests as cfg says, for r.Use on
// router, the top router whose patterns the rules name: inside a
// sub-router (Route, Mount), whose Use sees only the rest of the path,
// install per-route limits on its routes with r.With instead.
func New(cfg admit.Config, router chi.Routes) (func(http.Handler) http.Handler, error) {
	return sluicehttp.New(cfg, sluicehttp.FindRoute(func(req *http.Request) string {
		path := req.URL.RawPath // what chi routes by, if the URL has one
		if path == "" {
			path = req.URL.Path
		}
		return router.Find(chi.NewRouteContext(), req.Method, path)
	}))
}
