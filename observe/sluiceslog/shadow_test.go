package sluiceslog_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// A shadow denial's line says so: it was recorded, not answered.
func TestShadowDenialTold(t *testing.T) {
	logger, buf := newLogger(slog.LevelDebug)
	o := newObserver(t, logger)
	p := core.MustPolicy(core.PolicyConfig{Name: "new-limit", Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 1})
	o(context.Background(), core.Event{Kind: core.Denied, Decision: core.Decision{Policy: p, RetryAfter: time.Second}})
	o(context.Background(), core.Event{Kind: core.Denied, Shadow: true, Decision: core.Decision{Policy: p, RetryAfter: time.Second}})
	lines := buf.lines()
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], `msg="sluice: request denied" policy=new-limit`)
	assert.NotContains(t, lines[0], "shadow")
	assert.Contains(t, lines[1], `msg="sluice: request denied in shadow" policy=new-limit`)
	assert.Contains(t, lines[1], "shadow=true")
}
