package sluiceotel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

var _ net.Error = timeoutError{}

func TestErrorType(t *testing.T) {
	refused := errors.New("connection refused")
	for _, c := range []struct {
		err  error
		want errorType
	}{
		{refused, errOther},
		{&core.StoreError{Op: "take", Err: context.DeadlineExceeded}, errTimeout},
		{&core.StoreError{Op: "take", Err: &net.OpError{Op: "read", Err: timeoutError{}}}, errTimeout},
		{errors.Join(&core.StoreError{Op: "take", Err: refused}, &core.StoreError{Op: "fallback", Err: context.Canceled}), errCanceled},
		{fmt.Errorf("x: %w", context.Canceled), errCanceled},
	} {
		assert.Equal(t, c.want, errorTypeOf(c.err), "%v", c.err)
	}
}

func TestIsAdjust(t *testing.T) {
	refused := errors.New("connection refused")
	assert.True(t, isAdjust(&core.StoreError{Op: "adjust", Err: refused}))
	assert.True(t, isAdjust(&core.StoreError{Op: "adjust", Err: errors.Join(&core.StoreError{Op: "take", Err: refused})}),
		"the outer error says what failed")
	assert.True(t, isAdjust(errors.Join(&core.StoreError{Op: "adjust", Err: refused}, &core.StoreError{Op: "adjust", Err: refused})),
		"a reservation's layers failing one by one")
	assert.False(t, isAdjust(errors.Join(&core.StoreError{Op: "take", Err: refused}, &core.StoreError{Op: "fallback", Err: refused})))
	assert.False(t, isAdjust(fmt.Errorf("wrapped: %w", &core.StoreError{Op: "take-all", Err: refused})))
	assert.False(t, isAdjust(refused))
	assert.False(t, isAdjust(nil))
}

// Policies made on the fly fill the cache up to its bound, and are recorded
// all the same past it.
func TestCacheIsBounded(t *testing.T) {
	m, err := New(noop.NewMeterProvider())
	assert.NoError(t, err)
	ctx := context.Background()
	for i := range maxCached + 100 {
		p := core.MustPolicy(core.PolicyConfig{Name: "p" + strconv.Itoa(i), Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 1})
		m.Observe(ctx, core.Event{Kind: core.Denied, Decision: core.Decision{Policy: p}})
	}
	assert.Equal(t, maxCached, m.policies.len())
	for i := range maxCached + 100 {
		m.Observe(ctx, core.Event{Kind: core.Shed, LimitName: "q" + strconv.Itoa(i), Err: &backpressure.ShedError{Reason: backpressure.Saturated}})
	}
	assert.Equal(t, maxCached, m.names.len())
}
