package main

import (
	"testing"

	"github.com/sluice-go/sluice/examples/internal/demo/demotest"
)

func TestDemo(t *testing.T) { demotest.RunHandler(t, newLimiter, newHandler) }
