package sluiceotel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
)

// A middleware announces its policies when it is built: every series of
// each exists at zero before the first request, with no WithPolicies.
func TestConfiguredPoliciesStartAtZero(t *testing.T) {
	f := newFixture(t)
	l := f.limiter(t, nil) // observed by the fixture's metrics
	_, err := admit.New(admit.Config{Limiter: l, Rules: []admit.Rule{
		{Policy: perIP, Key: admit.ClientIP()},
		{Policy: login, Key: admit.ClientIP(), Routes: []string{"POST /login"}},
	}})
	require.NoError(t, err)
	got := sums(t, f.collect(t), "sluice.rate_limiting.requests")
	for _, series := range []string{
		requests("per-ip", "acquired", false), requests("per-ip", "rejected", false),
		requests("login", "acquired", false), requests("login", "rejected", false),
		"sluice.rate_limiting.decided=false," + requests("per-ip", "acquired", false),
	} {
		v, ok := got[series]
		assert.True(t, ok, "no series %s before the first request", series)
		assert.Zero(t, v)
	}
}
