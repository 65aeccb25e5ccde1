package demo

import (
	"bytes"
	"context"
	"github.com/sluice-go/sluice/sluicetest"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/observe/sluiceslog"
	"github.com/sluice-go/sluice/store/redis/redisstore"
)

// With Redis down, the demo logs a few of its failed decisions, not one
// line each: it once wrote 200 lines in two seconds under load.
func TestStoreFailuresAreLoggedAtABoundedRate(t *testing.T) {
	defer goleak.VerifyNone(t)
	// A port nothing listens on: every connection is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	var out bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&out, nil))
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	failures, err := sluiceslog.New(logger, sluiceslog.WithClock(clock))
	require.NoError(t, err)
	l, closeStores, err := newLimiter(addr, 1, failures, redisstore.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	defer closeStores()

	ctx := context.Background()
	for range 200 {
		d, err := l.Take(ctx, core.Request{Key: "198.51.100.20", Policy: PerIP, Cost: 1})
		require.NoError(t, err)
		require.True(t, d.Degraded)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 5)
	for _, line := range lines {
		assert.Contains(t, line, `level=WARN msg="sluice: store failed" policy=per-ip`)
		assert.Contains(t, line, "decided_by=fallback")
		assert.NotContains(t, line, "198.51.100.20")
	}
}
