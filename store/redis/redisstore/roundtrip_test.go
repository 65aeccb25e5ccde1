package redisstore

import (
	"context"
	"errors"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/storekit"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storetest"
)

// TestOneRoundTrip counts what the client sends, with a go-redis hook: one
// command per Take, TakeAll, Adjust and Reset, whatever the algorithms.
func TestOneRoundTrip(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	clock := sluicetest.NewManualClock(storetest.Epoch)
	s := newTestStore(t, c, WithClock(clock))
	n := hook(s)
	var ps []*core.Policy
	for _, alg := range allAlgorithms {
		ps = append(ps, tenPer10s(alg, "rt-"+alg.String()))
	}
	_, err := s.Take(ctx, core.Request{Key: "warm", Policy: ps[0], Cost: 1}) // loads the script
	require.NoError(t, err)

	check := func(what string, want int64, f func()) {
		t.Helper()
		before := n.roundTrips()
		f()
		assert.Equal(t, want, n.roundTrips()-before, what)
		assert.Zero(t, n.pipelines.Load(), "no pipelines on one server")
	}
	for _, p := range ps {
		check("Take "+p.Name(), 20, func() {
			for i := range 20 {
				_, err := s.Take(ctx, core.Request{Key: "k" + strconv.Itoa(i%3), Policy: p, Cost: 1})
				require.NoError(t, err)
				clock.Advance(time.Millisecond)
			}
		})
		check("Adjust "+p.Name(), 1, func() {
			_, err := s.Adjust(ctx, core.Request{Key: "k0", Policy: p, Cost: -1})
			require.NoError(t, err)
		})
		check("Reset "+p.Name(), 1, func() {
			require.NoError(t, s.Reset(ctx, "k1", p))
		})
	}
	rs := make([]core.Request, len(ps))
	for i, p := range ps {
		rs[i] = core.Request{Key: "layered", Policy: p, Cost: 3}
	}
	ds := make([]core.Decision, len(rs))
	check("TakeAll over a layer per algorithm, allowed then denied", 5, func() {
		for range 5 {
			require.NoError(t, s.TakeAll(ctx, rs, ds))
		}
	})
	assert.False(t, storekit.MostRestrictive(ds).Allowed, "the last ones were denied")
}

// TestCommandStats counts on the server itself, a private one so that no
// other client's commands are counted: one EVALSHA per decision, nothing
// else; and EVAL once after the script cache was flushed.
func TestCommandStats(t *testing.T) {
	srv := startServer(t)
	c := goredis.NewClient(clientOptions(srv.addr()))
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	clock := sluicetest.NewManualClock(storetest.Epoch)
	s := newTestStore(t, c, WithClock(clock))
	p := tenPer10s(core.TokenBucket, "stats")
	q := tenPer10s(core.SlidingLog, "stats-log")

	stats := func() map[string]int64 {
		t.Helper()
		info, err := c.Info(ctx, "commandstats").Result()
		require.NoError(t, err)
		m := map[string]int64{}
		for _, line := range strings.Split(info, "\r\n") {
			name, rest, ok := strings.Cut(line, ":calls=")
			if !ok {
				continue
			}
			calls, _, _ := strings.Cut(rest, ",")
			m[strings.TrimPrefix(name, "cmdstat_")], _ = strconv.ParseInt(calls, 10, 64)
		}
		return m
	}

	// A fresh server has no script: the first call falls back to EVAL.
	require.NoError(t, c.ConfigResetStat(ctx).Err())
	_, err := s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
	require.NoError(t, err)
	m := stats()
	assert.Equal(t, int64(1), m["evalsha"], "EVALSHA first")
	assert.Equal(t, int64(1), m["eval"], "then EVAL on NOSCRIPT")

	// Each script is sent once per server: the generic one for layers
	// mixing algorithms, the per-algorithm one for adjustments.
	ds := make([]core.Decision, 2)
	require.NoError(t, s.TakeAll(ctx, []core.Request{{Key: "a", Policy: p, Cost: 1}, {Key: "b", Policy: q, Cost: 1}}, ds))
	_, err = s.Adjust(ctx, core.Request{Key: "a", Policy: p, Cost: -1})
	require.NoError(t, err)
	m = stats()
	assert.Equal(t, int64(3), m["eval"])

	require.NoError(t, c.ConfigResetStat(ctx).Err())
	for i := range 100 {
		_, err := s.Take(ctx, core.Request{Key: "k" + strconv.Itoa(i%7), Policy: p, Cost: 1})
		require.NoError(t, err)
		require.NoError(t, s.TakeAll(ctx, []core.Request{{Key: "a", Policy: p, Cost: 1}, {Key: "b", Policy: q, Cost: 1}}, ds))
		_, err = s.Adjust(ctx, core.Request{Key: "a", Policy: p, Cost: -1})
		require.NoError(t, err)
		clock.Advance(time.Millisecond)
	}
	m = stats()
	assert.Equal(t, int64(300), m["evalsha"], "one EVALSHA per decision")
	assert.Zero(t, m["eval"])
	for name, calls := range m {
		switch name {
		case "evalsha", "config|resetstat", "config", "info":
		default:
			// Commands a script runs are counted too; the client sent
			// none of them on its own.
			assert.Contains(t, []string{"get", "set", "del", "llen", "lindex", "lrange", "ltrim", "lset", "rpush", "rpop", "pexpire", "time"},
				name, "%d calls of %s", calls, name)
		}
	}

	// After SCRIPT FLUSH (or a restart), EVAL once, then EVALSHA again.
	require.NoError(t, c.ScriptFlush(ctx).Err())
	require.NoError(t, c.ConfigResetStat(ctx).Err())
	for range 3 {
		_, err := s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
		require.NoError(t, err)
	}
	m = stats()
	assert.Equal(t, int64(1), m["eval"])
	assert.Equal(t, int64(3), m["evalsha"])

	// Preload sends every script up front: no EVAL afterwards.
	require.NoError(t, c.ScriptFlush(ctx).Err())
	require.NoError(t, s.Preload(ctx))
	require.NoError(t, c.ConfigResetStat(ctx).Err())
	for _, alg := range allAlgorithms {
		pa := tenPer10s(alg, "pre")
		_, err := s.Take(ctx, core.Request{Key: "k", Policy: pa, Cost: 1})
		require.NoError(t, err)
		_, err = s.Adjust(ctx, core.Request{Key: "k", Policy: pa, Cost: -1})
		require.NoError(t, err)
	}
	require.NoError(t, s.TakeAll(ctx, []core.Request{{Key: "a", Policy: p, Cost: 1}, {Key: "b", Policy: q, Cost: 1}}, ds))
	require.NoError(t, s.Reset(ctx, "k", p))
	m = stats()
	assert.Zero(t, m["eval"])
	assert.Equal(t, int64(2*len(allAlgorithms)+2), m["evalsha"])
}

// TestScriptErrorsHideInternals: an error reply to a script reaches the
// caller as its error code alone, never the script's text or line numbers.
func TestScriptErrorsHideInternals(t *testing.T) {
	c := sharedClient(t)
	err := c.Eval(context.Background(), "return redis.error_reply('ERR value is not an integer @user_script:205')", nil).Err()
	require.Error(t, err)
	err = scriptError(err)
	assert.ErrorIs(t, err, errScript)
	assert.Equal(t, "redisstore: script call refused: ERR", err.Error())
	assert.NotContains(t, err.Error(), "user_script")
	other := errors.New("dial tcp: connection refused")
	assert.Same(t, other, scriptError(other), "other errors pass as they are")
}
