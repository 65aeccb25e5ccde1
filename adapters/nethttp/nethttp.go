// Package nethttp is sluice's net/http middleware. All behaviour (keys,
// headers, denials) is in package httplimit; this package only hands it
// net/http's request and response.
//
// The route template a rule's Routes and the Route key see is the pattern
// http.ServeMux matched (Request.Pattern, e.g. "GET /items/{id}"), which the
// mux sets before calling the handler it matched. Wrap each pattern's handler
// to have it, as below; wrapping the whole mux leaves it empty.
package nethttp

import (
	"net/http"

	"github.com/sluice-go/sluice/adapters/httplimit"
)

// New returns middleware that limits requests as cfg says.
func New(cfg httplimit.Config) (func(http.Handler) http.Handler, error) {
	m, err := httplimit.New(cfg)
	if err != nil {
		return nil, err
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r, ok := m.DecideHTTP(w, r, r.Pattern, nil); ok {
				next.ServeHTTP(w, r)
			}
		})
	}, nil
}
