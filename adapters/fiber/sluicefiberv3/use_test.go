package sluicefiberv3

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The Fiber version in go.mod has the field that tells app.Use handlers'
// routes apart; without it every route would count as unknown.
func TestUseFieldFound(t *testing.T) {
	assert.GreaterOrEqual(t, useField, 0)
}
