package redisstore

import (
	"context"
	"github.com/sluice-go/sluice/sluicetest"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storetest"
)

var upstream = core.MustPolicy(core.PolicyConfig{Name: "upstream", Algorithm: core.LeakyQueue,
	Quota: 2, Period: time.Second, Burst: 1, MaxDelay: 5 * time.Second})

// A leaky queue hands out turns in order: spread over shards, or spent from
// local leases, it would release requests together. New refuses both,
// before dialing anything.
func TestQueueIsNeitherSplitNorLeased(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = c.Close() })
	_, err := New(c, WithSplit(upstream, 2))
	assert.ErrorContains(t, err, "cannot be split")
	_, err = New(c, WithLease(upstream, 1, time.Second))
	assert.ErrorContains(t, err, "cannot be leased")
}

// The turn comes back from the script as outcome 3, in the place of the
// retry-after, which a grant does not have; the state is GCRA's one number,
// the time the queue drains.
func TestQueueReply(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	clock := sluicetest.NewManualClock(storetest.Epoch)
	s := newTestStore(t, c, WithClock(clock))
	for k := range 3 {
		d, err := s.Take(ctx, core.Request{Key: "k", Policy: upstream, Cost: 1})
		require.NoError(t, err)
		assert.Equal(t, core.Decision{Policy: upstream, Allowed: true, Limit: 1, ResetAfter: time.Duration(k+1) * 500 * time.Millisecond,
			Delay: time.Duration(k) * 500 * time.Millisecond}, d)
	}
	raw, err := c.Get(ctx, s.Key("k", upstream)).Result()
	require.NoError(t, err)
	assert.Equal(t, "1893456001500000", raw, "the time the queue drains, in µs")

	// Batched with other operations, the decisions are the same.
	o := s.pipe.get(opTake, clock.Now().UnixMicro())
	o.layers = append(o.layers, layerOf(s.info(upstream), "k", 1), layerOf(s.info(tenPer10s(core.GCRA, "rate")), "k", 1))
	require.NoError(t, s.send(ctx, []*op{o}))
	require.NoError(t, o.err)
	assert.Equal(t, []int64{outDelayed, 0, 2_000_000, 1_500_000, outAllowed, 9, 1_000_000, 0}, o.out)
}
