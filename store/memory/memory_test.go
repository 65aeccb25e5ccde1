package memory_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t testing.TB, clock core.Clock) core.Store {
		s, err := memory.New(memory.WithClock(clock))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
