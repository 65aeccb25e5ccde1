package redisstore

import (
	"testing"

	"github.com/sluice-go/sluice/store/storetest"
)

// TestConformance runs the conformance suite on the shared Redis, on the
// suite's manual clock: batched (the default) and one decision per round
// trip.
func TestConformance(t *testing.T) {
	c := sharedClient(t)
	t.Run("batched", func(t *testing.T) { storetest.Run(t, redisFactory(c)) })
	t.Run("unbatched", func(t *testing.T) { storetest.Run(t, redisFactory(c, WithBatch(1))) })
}

// TestDifferential drives the memory store and this one with the same
// 10,000 random steps per algorithm and requires identical decisions.
func TestDifferential(t *testing.T) {
	c := sharedClient(t)
	storetest.Differential(t, memoryFactory, redisFactory(c), 10_000, testSeed(t))
}
