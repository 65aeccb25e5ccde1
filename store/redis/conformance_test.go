package redis

import (
	"testing"

	"github.com/sluice-go/sluice/store/storetest"
)

// TestConformance runs the conformance suite on the shared Redis, on the
// suite's manual clock.
func TestConformance(t *testing.T) {
	storetest.Run(t, redisFactory(sharedClient(t)))
}

// TestDifferential drives the memory store and this one with the same
// 10,000 random steps per algorithm and requires identical decisions.
func TestDifferential(t *testing.T) {
	c := sharedClient(t)
	storetest.Differential(t, memoryFactory, redisFactory(c), 10_000, testSeed(t))
}
