package redisstore

import (
	"context"
	"fmt"
	"github.com/sluice-go/sluice/sluicetest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storetest"
)

// global is a limit for one hot key: 100 at once, one more an hour.
var global = core.MustPolicy(core.PolicyConfig{Name: "global", Algorithm: core.TokenBucket, Quota: 1, Period: time.Hour, Burst: 100})

func TestSplitKeys(t *testing.T) {
	share, err := global.Share(4)
	require.NoError(t, err)
	pi := newPolicyInfo("app:", share)
	whole := newPolicyInfo("app:", global)
	seen := map[string]bool{}
	for _, k := range []string{"", "k", "k%s1", "%", "}", "k%s"} {
		for i := range 4 {
			sk := pi.shardKey(k, i)
			assert.False(t, seen[sk], "%q shard %d", k, i)
			seen[sk] = true
			assert.NotEqual(t, whole.key(k), sk)
			for _, other := range []string{"k%s1", "k%s", k + "%s" + fmt.Sprint(i)} {
				assert.NotEqual(t, pi.key(other), sk, "no user key names another's shard")
			}
		}
	}
	slots := map[int]bool{}
	for i := range 4 {
		slots[slot(pi.shardKey("global", i))] = true
	}
	assert.Len(t, slots, 4, "the shards of a key fall in different slots")

	c := goredis.NewClient(clientOptions(redisAddr()))
	defer c.Close()
	for _, bad := range []Option{WithSplit(nil, 4), WithSplit(global, 1), WithSplit(global, maxSplit+1)} {
		_, err := New(c, bad)
		assert.Error(t, err)
	}
	_, err = New(c, WithSplit(global, 4), WithLease(global, 10, time.Second))
	assert.Error(t, err, "split or leased, not both")
}

// TestSplit: a limit split four ways admits exactly the limit when every
// instance keeps asking (the shards drain evenly), never more, and denies
// while other shards hold units only as far as the stated bound.
func TestSplit(t *testing.T) {
	c := sharedClient(t)
	clock := sluicetest.NewManualClock(storetest.Epoch)
	prefix := testPrefix(t, c)
	const instances, workers, shards = 4, 4, 4
	stores := make([]*Store, instances)
	for i := range stores {
		s, err := New(c, WithPrefix(prefix), WithClock(clock), WithSplit(global, shards), WithTimeout(testTimeout))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	ctx := context.Background()

	var admitted atomic.Int64
	var wg sync.WaitGroup
	for _, s := range stores {
		for range workers {
			wg.Go(func() {
				for range 40 {
					d, err := s.Take(ctx, core.Request{Key: "hot", Policy: global, Cost: 1})
					if !assert.NoError(t, err) {
						return
					}
					assert.Same(t, global, d.Policy)
					assert.Equal(t, int64(100), d.Limit)
					if d.Allowed {
						admitted.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	assert.Equal(t, int64(100), admitted.Load(), "exactly the limit across the shards")
	for i := range shards {
		share, _ := global.Share(shards)
		raw, err := c.Get(ctx, stores[0].info(global).share.shardKey("hot", i)).Result()
		require.NoError(t, err, "shard %d", i)
		assert.Regexp(t, `^0:`, raw, "shard %d is spent", i)
		assert.Equal(t, int64(25), share.Burst())
	}

	// Uneven costs: each shard keeps 5 units a cost of 20 cannot use.
	s := stores[0]
	for range shards {
		d, err := s.Take(ctx, core.Request{Key: "uneven", Policy: global, Cost: 20})
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	d, err := s.Take(ctx, core.Request{Key: "uneven", Policy: global, Cost: 20})
	require.NoError(t, err)
	assert.False(t, d.Allowed, "denied with 20 units left over the shards")
	assert.LessOrEqual(t, int64(shards*5), int64((shards-1)*25), "within the bound: (n−1) shares")
	assert.Equal(t, int64(5*shards), d.Remaining, "one shard's 5, times four: the estimate")
	d, err = s.Take(ctx, core.Request{Key: "uneven", Policy: global, Cost: 26})
	require.NoError(t, err)
	assert.True(t, d.Impossible, "a cost above a share's burst is impossible")

	// Reset forgets every shard; Adjust goes to one.
	require.NoError(t, s.Reset(ctx, "hot", global))
	for i := range shards {
		n, err := c.Exists(ctx, s.info(global).share.shardKey("hot", i)).Result()
		require.NoError(t, err)
		assert.Zero(t, n)
	}
	_, err = s.Adjust(ctx, core.Request{Key: "hot", Policy: global, Cost: 5})
	require.NoError(t, err)
	total := 0
	for i := range shards {
		raw, err := c.Get(ctx, s.info(global).share.shardKey("hot", i)).Result()
		if err == nil {
			total++
			assert.Regexp(t, `^20:`, raw, "the charge went to one shard")
		}
	}
	assert.Equal(t, 1, total)
}
