package client

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/core"
)

// sleep waits d on clk: ctx.Err() at once if ctx is already done, even for
// d <= 0, nil once d has passed, ctx.Err() if ctx ends first.
func sleep(ctx context.Context, clk core.Clock, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	return clk.SleepUntil(ctx, clk.Now().Add(d))
}
