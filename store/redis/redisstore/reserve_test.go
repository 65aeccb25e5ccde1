package redisstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/storetest"
)

// sweeplessMemory is memoryFactory without the background sweep, which
// reclaims expired reservations whenever it runs.
func sweeplessMemory(t testing.TB, clock core.Clock) core.Store {
	s, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	require.NoError(t, err)
	return s
}

// TestReservationDifferential drives the memory store and this one with
// the same random reservations and settles, and requires identical
// decisions.
func TestReservationDifferential(t *testing.T) {
	c := sharedClient(t)
	storetest.ReservationDifferential(t, sweeplessMemory, redisFactory(c), 5000, testSeed(t))
}
