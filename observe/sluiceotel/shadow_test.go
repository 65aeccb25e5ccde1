package sluiceotel

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/sluice/core"
)

// A decision not enforced counts under a result of its own, never as a
// rejection.
func TestShadowResults(t *testing.T) {
	denied := core.Decision{}
	allowed := core.Decision{Allowed: true}
	assert.Equal(t, "rejected", resultNames[resultOf(core.Denied, denied, false)])
	assert.Equal(t, "shadow_rejected", resultNames[resultOf(core.Denied, denied, true)])
	assert.Equal(t, "shadow_acquired", resultNames[resultOf(core.Allowed, allowed, true)])
	assert.Equal(t, "shadow_rejected", resultNames[resultOf(core.StoreFailed, denied, true)])
	assert.False(t, slot{kind: kindRequest, result: resultShadowDenied}.attributes("p")[2].Value.AsBool(), "a shadow decision is not near its limit")
}
