package httplimittest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
)

// checkUserAllocs checks that finding the user in the framework's values
// allocates nothing: a User key costs no more than a Header key reading the
// same name from the request.
func checkUserAllocs(t *testing.T, h Harness) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: allocation counts vary")
	}
	roomy := core.MustPolicy(core.PolicyConfig{Name: "roomy", Algorithm: core.TokenBucket, Quota: 1_000_000, Period: time.Second, Burst: 1 << 30})
	perRequest := func(key admit.Key) float64 {
		env := NewEnv(t)
		srv := h(t, admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{{Policy: roomy, Key: key}}}, Routes)
		req := Req{Header: hdr(UserHeader, "ann")}.WithDefaults()
		return testing.AllocsPerRun(100, func() {
			if resp := srv(req); resp.Header.Get("RateLimit") == "" {
				t.Fatalf("no RateLimit field (status %d)", resp.Status)
			}
		})
	}
	byHeader := perRequest(admit.Header(UserHeader))
	byUser := perRequest(admit.User(UserOf))
	assert.LessOrEqual(t, byUser, byHeader, "allocations per request with a User key, and with a Header key")
}

// checkBadRoutes checks that the adapter's constructor refuses malformed
// Routes entries, saying which rule and entry.
func checkBadRoutes(t *testing.T, a Adapter) {
	for _, tc := range []struct {
		routes []string
		want   string
	}{
		{[]string{""}, `rule 1 (login): route "": want "METHOD /template" or "/template"`},
		{[]string{"login"}, `route "login": want "METHOD /template" or "/template"`},
		{[]string{"post /login"}, `route "post /login": method "post" is not upper-case (methods are case-sensitive)`},
		{[]string{"POST  /login"}, `route "POST  /login": want "METHOD /template" or "/template"`},
		{[]string{"POST\t/login"}, `route "POST\t/login": want "METHOD /template" or "/template"`},
		{[]string{" /login"}, `route " /login": leading or trailing space`},
		{[]string{"/login "}, `route "/login ": leading or trailing space`},
		{[]string{"GET example.com/login"}, `route "GET example.com/login": want "METHOD /template" or "/template"`},
		{[]string{"GET /a b"}, `route "GET /a b": the template holds a space or a control character`},
		{[]string{"G(T /x"}, `route "G(T /x": method "G(T" is not a token`},
		{[]string{"/login?x"}, `route "/login?x": the template holds '?' outside a parameter`},
		{[]string{"POST /login?next=/"}, `route "POST /login?next=/": the template holds '?' outside a parameter`},
		{[]string{"/login?"}, `route "/login?": the template holds '?' outside a parameter`},
		{[]string{"/items/:id/x?"}, `route "/items/:id/x?": the template holds '?' outside a parameter`},
		{[]string{"/login#"}, `route "/login#": the template holds '#'`},
		{[]string{"GET /docs#top"}, `route "GET /docs#top": the template holds '#'`},
		{[]string{"/login", "POST /login", "/login"}, `rule 1 (login): route "/login" is listed twice`},
	} {
		env := NewEnv(t)
		err := a.New(admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{
			{Policy: PerIP, Key: admit.ClientIP()},
			{Policy: Login, Key: admit.ClientIP(), Routes: tc.routes},
		}})
		if assert.Errorf(t, err, "Routes %q", tc.routes) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
	env := NewEnv(t)
	assert.NoError(t, a.New(admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{
		{Policy: Login, Key: admit.ClientIP(), Routes: []string{"/", "POST /login", "GET /login", "M-SEARCH /x", "GET " + "/items/" + a.Param("id"), "/users/:id?", "/span/:from?-:to?"}},
	}}))
}
